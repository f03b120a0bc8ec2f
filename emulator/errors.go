package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
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
	// additional is the body's additionalErrorInfo (JSON text), where
	// Cosmos DB sends one: the plan of a query the gateway leaves to the
	// client.
	additional string
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
	case http.StatusRequestHeaderFieldsTooLarge:
		return "RequestHeaderFieldsTooLarge"
	case http.StatusHTTPVersionNotSupported:
		return "HttpVersionNotSupported"
	case http.StatusExpectationFailed:
		return "ExpectationFailed"
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

// Listener wraps a listener of plain-HTTP connections served by net/http,
// so that the refusals net/http writes itself, before any handler runs, are
// answered in Cosmos DB's shape, as the Server answers everything else:
// a header past http.Server.MaxHeaderBytes (431), a malformed request line
// or header, a missing Host (400), an unsupported transfer encoding (501) or
// HTTP version (505), an Expect header other than 100-continue (417). net/http writes each as one plain-text response of a
// fixed form, which the connection recognises and replaces with a JSON body
// {"code": ..., "message": ...}; every other write passes through as is. It
// costs one comparison of the start of each write. For HTTPS use
// ListenerTLS, which rewrites them inside TLS.
func Listener(ln net.Listener) net.Listener { return refusalListener{ln} }

type refusalListener struct{ net.Listener }

func (l refusalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &refusalConn{Conn: c}, nil
}

// refusalConn is a connection whose net/http refusals are rewritten.
type refusalConn struct{ net.Conn }

// netHTTPRefusalHeaders follow the status line of every response net/http
// writes before a handler runs (net/http/server.go, errorHeaders); no
// handler's response has them (it has at least a Date), so they mark it.
const netHTTPRefusalHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *refusalConn) Write(b []byte) (int, error) {
	if status, text, ok := netHTTPRefusal(b); ok {
		if _, err := c.Conn.Write(cosmosRefusal(status, text)); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// CloseWrite half-closes a TCP connection, as net/http does after a 431 so
// the client reads the answer before the connection ends.
func (c *refusalConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// netHTTPRefusal recognises a response net/http wrote itself: "HTTP/1.1
// 431 Request Header Fields Too Large" and the refusal headers, then the
// body; or its 417 to an Expect other than 100-continue, which the Server
// never answers. It returns the status and the refusal's text.
func netHTTPRefusal(b []byte) (int, string, bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(b, []byte(proto)) {
		return 0, "", false
	}
	if bytes.HasPrefix(b[len(proto):], []byte("417 ")) {
		return http.StatusExpectationFailed, "the Expect header asks for what the server does not do (only 100-continue is)", true
	}
	eol := bytes.Index(b, []byte("\r\n"))
	if eol < 0 || !bytes.HasPrefix(b[eol:], []byte(netHTTPRefusalHeaders)) || eol < len(proto)+3 {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(b[len(proto) : len(proto)+3]))
	if err != nil || status < 400 {
		return 0, "", false
	}
	return status, string(b[eol+len(netHTTPRefusalHeaders):]), true
}

// cosmosRefusal is the response that replaces net/http's refusal.
func cosmosRefusal(status int, text string) []byte {
	msg := "docshard serve refused the request before reading it: " + text
	if status == http.StatusRequestHeaderFieldsTooLarge {
		msg = fmt.Sprintf("Request headers are larger than docshard serve reads (http.Server.MaxHeaderBytes; docshard serve sets emulator.MaxHeaderBytes = %d): %s", MaxHeaderBytes, text)
	}
	activity := newActivityID()
	body, _ := json.Marshal(map[string]string{"code": statusCode(status), "message": msg + "\r\nActivityId: " + activity + ", docshard serve"})
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: %d\r\nContent-Type: application/json\r\n", status, http.StatusText(status), len(body))
	fmt.Fprintf(&b, "x-ms-activity-id: %s\r\nx-ms-request-charge: 0.00\r\nx-ms-serviceversion: version=docshard\r\n\r\n", activity)
	b.Write(body)
	return b.Bytes()
}
