package partitionkey

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors. Every key error of this package wraps one of them, so
// callers test them with errors.Is; resolver re-exports them under the same
// names.
var (
	// ErrNoPartitionKey: a document has no value at the partition-key path
	// (or is not JSON enough to tell), or a key is nil.
	ErrNoPartitionKey = errors.New("no partition key")
	// ErrKeyType: a key has a type that has no text here: an object or
	// array, NaN or an infinity, a Go type that is not a JSON scalar.
	ErrKeyType = errors.New("partition key has an unsupported type")
)

// KeyError reports a key that could not be read, written or resolved. It
// names the key (and the path it came from, where there is one) and wraps a
// sentinel: ErrNoPartitionKey, ErrKeyType, or one of a resolver's own
// (resolver.ErrNoTarget). resolver.KeyError is this type.
//
// Its message reads "resolver: <sentinel>[ at path P][: key K (T)][:
// reason]": the prefix is the one resolver.KeyError has always printed, and
// logs and tests match it.
type KeyError struct {
	Path   string // the partition-key path, when the key came from a document
	Key    any    // the offending key; nil when the key is missing
	Reason string // extra detail, may be empty
	Err    error  // the sentinel
}

// Error implements error.
func (e *KeyError) Error() string {
	msg := "resolver: " + e.Err.Error()
	if e.Path != "" {
		msg += " at path " + e.Path
	}
	if e.Key != nil {
		k := fmt.Sprintf("%v", e.Key)
		if s, ok := e.Key.(string); ok {
			k = strconv.Quote(s)
		}
		msg += fmt.Sprintf(": key %s (%T)", k, e.Key)
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap returns the sentinel.
func (e *KeyError) Unwrap() error { return e.Err }

// PathError reports a malformed partition-key path: which path, the byte
// offset (from 0) of the problem, and what it is. resolver turns it into a
// *resolver.ConfigError for the field "partitionKey", store into a
// *store.Error wrapping store.ErrBadRequest.
type PathError struct {
	Path   string // the path as given
	Offset int    // where the problem is
	Reason string // what is wrong
}

// Error returns `partition-key path "P": at byte N: reason`.
func (e *PathError) Error() string {
	return fmt.Sprintf("partition-key path %q: at byte %d: %s", e.Path, e.Offset, e.Reason)
}
