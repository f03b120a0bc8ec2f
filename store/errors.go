package store

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Every error a backend returns for these conditions wraps
// one of them (usually inside an *Error), so callers use errors.Is.
var (
	// ErrNotFound: the document (or collection) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrCollectionNotFound: the collection does not exist. It wraps
	// ErrNotFound, so errors.Is(err, ErrNotFound) holds too.
	ErrCollectionNotFound = &kindError{msg: "collection not found", parent: ErrNotFound}
	// ErrClosed: the store was closed (Close); final, never worth a retry.
	// It wraps ErrUnavailable, so errors.Is(err, ErrUnavailable) holds too.
	ErrClosed = &kindError{msg: "unavailable: the store is closed", parent: ErrUnavailable}
	// ErrConflict: a document or collection with that id already exists.
	ErrConflict = errors.New("conflict")
	// ErrUniqueKeyConflict: the write would give two documents of one
	// partition-key value the same values of a unique key
	// (CollectionSpec.UniqueKeys); nothing is written. It wraps
	// ErrConflict (Cosmos DB answers both 409), so errors.Is(err,
	// ErrConflict) holds too; test for it first to tell the two apart.
	ErrUniqueKeyConflict = &kindError{msg: "conflict: unique key", parent: ErrConflict}
	// ErrPreconditionFailed: an If-Match ETag does not match the stored one.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrThrottled: the backend asks the caller to slow down; *Error's
	// RetryAfter says for how long.
	ErrThrottled = errors.New("throttled")
	// ErrTooLarge: the document exceeds MaxDocumentSize.
	ErrTooLarge = errors.New("request entity too large")
	// ErrBadRequest: malformed input (JSON, id, SQL, continuation token,
	// partition key).
	ErrBadRequest = errors.New("bad request")
	// ErrFenced: the write was stamped with an epoch older than the
	// database's fence (see Fencer); the writer must learn the current
	// state before it writes again.
	ErrFenced = errors.New("fenced: stale epoch")
	// ErrUnavailable: the backend cannot be reached or is closed.
	ErrUnavailable = errors.New("unavailable")
	// ErrQuotaExceeded: the collection (or the document's logical
	// partition) is full: the backend refuses writes that would grow it
	// past its CollectionSpec.Quota (the embedded store, docshard serve)
	// or its own limits (Cosmos DB's 403 with sub-status 1014 or a storage
	// quota message); nothing is written. A spillover opens its next
	// collection when it sees one, and its router sends the write there.
	ErrQuotaExceeded = errors.New("storage quota exceeded")
)

type kindError struct {
	msg    string
	parent error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.parent }

// Error is the error backends return: which operation on which collection
// and document failed, and why.
type Error struct {
	Kind       error         // one of the sentinels above
	Op         string        // "create", "read", "query", ...
	Link       string        // the collection link, when there is one
	ID         string        // the document id, when there is one
	Status     int           // the backend's status code (HTTP status for Cosmos DB), 0 if none
	RetryAfter time.Duration // for ErrThrottled: how long to wait before retrying
	Message    string        // detail that names the problem
	Err        error         // the underlying cause, may be nil
}

// Error implements error: "store: create dbs/a/colls/b id "x": conflict: detail".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("store: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteByte(' ')
	}
	if e.Link != "" {
		b.WriteString(e.Link)
		b.WriteByte(' ')
	}
	if e.ID != "" {
		fmt.Fprintf(&b, "id %q ", e.ID)
	}
	s := strings.TrimSuffix(b.String(), " ")
	if e.Kind != nil {
		s += ": " + e.Kind.Error()
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return s
}

// Unwrap returns the kind and the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, 2)
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// Errorf returns an *Error of the given kind with a formatted message.
func Errorf(kind error, op, link, id, format string, args ...any) *Error {
	return &Error{Kind: kind, Op: op, Link: link, ID: id, Message: fmt.Sprintf(format, args...)}
}

// RetryAfter reports whether err is a throttling error and, if so, how long
// the backend asked to wait (0 when it did not say).
func RetryAfter(err error) (time.Duration, bool) {
	if !errors.Is(err, ErrThrottled) {
		return 0, false
	}
	var se *Error
	if errors.As(err, &se) {
		return se.RetryAfter, true
	}
	return 0, true
}
