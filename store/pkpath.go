package store

import (
	"errors"
	"fmt"

	"github.com/docshard/docshard/partitionkey"
)

// parseKeyPath parses a partition-key path; errors are *Error wrapping
// ErrBadRequest that name the path and the byte offset.
func parseKeyPath(path string) (partitionkey.Path, error) {
	p, err := partitionkey.ParsePath(path)
	if err != nil {
		return p, &Error{Kind: ErrBadRequest, Message: err.Error()}
	}
	return p, nil
}

// BadPartitionKey returns the error a backend gives for a partition-key
// value partitionkey has no identity text for (err from
// partitionkey.IdentityText): an *Error wrapping ErrBadRequest that names the
// value and its type.
func BadPartitionKey(err error) *Error {
	msg := "partition key: " + err.Error()
	var ke *partitionkey.KeyError
	if errors.As(err, &ke) {
		msg = fmt.Sprintf("partition key %v of type %T: %s", ke.Key, ke.Key, ke.Reason)
	}
	return &Error{Kind: ErrBadRequest, Message: msg}
}
