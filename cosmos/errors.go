package cosmos

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/docshard/docshard/store"
)

// mapErr turns an SDK error into a *store.Error with the sentinel of its
// status code.
func mapErr(op, link, id string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return &store.Error{Kind: store.ErrUnavailable, Op: op, Link: link, ID: id, Err: err}
	}
	se := &store.Error{Kind: statusKind(re.StatusCode, id), Op: op, Link: link, ID: id, Status: re.StatusCode, Message: re.ErrorCode}
	switch re.StatusCode {
	case http.StatusBadRequest:
		se.Message = serviceMessage(err) // what is wrong with the request, in the service's words
	case http.StatusPreconditionFailed:
		if fence, ok := fencedBy(re.RawResponse); ok {
			se.Kind = store.ErrFenced
			se.Message = "the database's fence is " + fence
		}
	case http.StatusConflict:
		if strings.Contains(re.Error(), "Unique index constraint violation") { // the service's words
			se.Kind = store.ErrUniqueKeyConflict
		}
	case http.StatusTooManyRequests:
		se.RetryAfter = retryAfter(re.RawResponse)
	case http.StatusForbidden:
		if quotaExceeded(re) {
			se.Kind = store.ErrQuotaExceeded
			break
		}
		se.Message = "the account rejected the credentials: " + re.ErrorCode
	case http.StatusUnauthorized:
		se.Message = "the account rejected the credentials: " + re.ErrorCode
	}
	return se
}

// quotaExceeded reports whether a 403 is Cosmos DB refusing a write for
// size: sub-status 1014 (a logical partition at its maximum size) or a
// storage quota message, rather than refused credentials.
func quotaExceeded(re *azcore.ResponseError) bool {
	if re.RawResponse != nil && re.RawResponse.Header.Get("x-ms-substatus") == "1014" {
		return true
	}
	return strings.Contains(strings.ToLower(re.Error()), "quota")
}

// statusKind is the store's sentinel for a status code of the service; a
// 404 is a missing collection when no document id is involved.
func statusKind(status int, id string) error {
	switch status {
	case http.StatusBadRequest:
		return store.ErrBadRequest
	case http.StatusNotFound:
		if id == "" {
			return store.ErrCollectionNotFound
		}
		return store.ErrNotFound
	case http.StatusConflict:
		return store.ErrConflict
	case http.StatusPreconditionFailed:
		return store.ErrPreconditionFailed
	case http.StatusRequestEntityTooLarge:
		return store.ErrTooLarge
	case http.StatusTooManyRequests:
		return store.ErrThrottled
	}
	return store.ErrUnavailable
}

// retryAfter reads the service's wait from x-ms-retry-after-ms (or
// Retry-After in seconds).
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(resp.Header.Get("x-ms-retry-after-ms"), 64); err == nil && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// notFoundIs reports whether err is a 404 from the service.
func notFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

func conflict(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusConflict
}
