package cosmos

import (
	"context"
	"errors"
	"net/http"
	"strconv"
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
	se := &store.Error{Op: op, Link: link, ID: id, Status: re.StatusCode, Message: re.ErrorCode}
	switch re.StatusCode {
	case http.StatusBadRequest:
		se.Kind = store.ErrBadRequest
	case http.StatusNotFound:
		se.Kind = store.ErrNotFound
		if id == "" {
			se.Kind = store.ErrCollectionNotFound
		}
	case http.StatusConflict:
		se.Kind = store.ErrConflict
	case http.StatusPreconditionFailed:
		se.Kind = store.ErrPreconditionFailed
	case http.StatusRequestEntityTooLarge:
		se.Kind = store.ErrTooLarge
	case http.StatusTooManyRequests:
		se.Kind = store.ErrThrottled
		se.RetryAfter = retryAfter(re.RawResponse)
	case http.StatusUnauthorized, http.StatusForbidden:
		se.Kind = store.ErrUnavailable
		se.Message = "the account rejected the credentials: " + re.ErrorCode
	default:
		se.Kind = store.ErrUnavailable
	}
	return se
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
