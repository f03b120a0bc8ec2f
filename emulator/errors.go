package emulator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/docshard/docshard/store"
)

// apiError is a failed request, answered as Cosmos DB answers: the status,
// a body {"code": ..., "message": ...} and, where Cosmos DB sends them, a
// sub-status and a retry-after.
type apiError struct {
	status     int
	code       string
	msg        string
	substatus  int
	retryAfter time.Duration
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.msg) }

// errorf returns an apiError with the code Cosmos DB gives the status.
func errorf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, code: statusCode(status), msg: fmt.Sprintf(format, args...)}
}

// statusCode is the "code" of Cosmos DB's error bodies for a status.
func statusCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequest"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowed"
	case http.StatusRequestTimeout:
		return "RequestTimeout"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusGone:
		return "Gone"
	case http.StatusPreconditionFailed:
		return "PreconditionFailed"
	case http.StatusRequestEntityTooLarge:
		return "RequestEntityTooLarge"
	case http.StatusTooManyRequests:
		return "TooManyRequests"
	case http.StatusNotImplemented:
		return "NotImplemented"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	}
	return "InternalServerError"
}

// Cosmos DB's own wording for the common failures, followed by docshard's
// detail.
const (
	msgNotFound     = "Entity with the specified id does not exist in the system."
	msgConflict     = "Entity with the specified id already exists in the system."
	msgPrecondition = "Operation cannot be performed because one of the specified precondition is not met."
	msgTooLarge     = "Request size is too large."
	msgQuota        = "Storage quota exceeded: the collection is full."
)

// unsupported answers a Cosmos DB feature docshard serve does not offer.
func unsupported(what string) *apiError {
	return errorf(http.StatusNotImplemented, "%s is not supported by docshard serve (see docs/serve.md, \"What it leaves out\")", what)
}

// fromStore maps a store error to Cosmos DB's status for it.
func fromStore(err error) *apiError {
	detail := strings.TrimPrefix(err.Error(), "store: ")
	e := &apiError{msg: detail}
	switch {
	case errors.Is(err, store.ErrCollectionNotFound):
		e.status, e.substatus = http.StatusNotFound, 1003
		e.msg = "Resource Not Found: " + detail
	case errors.Is(err, store.ErrNotFound):
		e.status, e.msg = http.StatusNotFound, msgNotFound+" "+detail
	case errors.Is(err, store.ErrConflict):
		e.status, e.msg = http.StatusConflict, msgConflict+" "+detail
	case errors.Is(err, store.ErrFenced):
		e.status, e.code = http.StatusPreconditionFailed, CodeFenced
		return e
	case errors.Is(err, store.ErrPreconditionFailed):
		e.status, e.msg = http.StatusPreconditionFailed, msgPrecondition+" "+detail
	case errors.Is(err, store.ErrQuotaExceeded):
		// As Cosmos DB refuses a write to a full partition: 403/1014.
		e.status, e.substatus = http.StatusForbidden, 1014
		e.msg = msgQuota + " " + detail
	case errors.Is(err, store.ErrTooLarge):
		e.status, e.msg = http.StatusRequestEntityTooLarge, msgTooLarge+" "+detail
	case errors.Is(err, store.ErrBadRequest):
		e.status = http.StatusBadRequest
	case errors.Is(err, store.ErrThrottled):
		e.status = http.StatusTooManyRequests
		e.retryAfter, _ = store.RetryAfter(err)
		if e.retryAfter <= 0 {
			e.retryAfter = 100 * time.Millisecond
		}
	case errors.Is(err, store.ErrUnavailable):
		e.status = http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e.status = http.StatusRequestTimeout
	default:
		e.status = http.StatusInternalServerError
	}
	e.code = statusCode(e.status)
	return e
}
