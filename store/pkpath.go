package store

import (
	"errors"
	"fmt"

	"github.com/docshard/docshard/partitionkey"
)

// ParsePartitionKeyPath splits a collection's partition-key path
// ("/userId", "/a/b", `/"name with space"`) into property names, with the
// grammar of partitionkey.ParsePath. Empty means "/id". Errors wrap
// ErrBadRequest.
//
// It is kept only for the router, its last caller, and goes when the router
// is ported: new code uses partitionkey.ParsePath (CheckSpec gives the parsed
// path of a spec). It is not marked deprecated yet only because staticcheck
// would then fail on the router.
func ParsePartitionKeyPath(path string) ([]string, error) {
	if path == "" {
		path = "/id"
	}
	p, err := parseKeyPath(path)
	if err != nil {
		return nil, err
	}
	return p.Segments(), nil
}

// parseKeyPath parses a partition-key path; errors are *Error wrapping
// ErrBadRequest that name the path and the byte offset.
func parseKeyPath(path string) (partitionkey.Path, error) {
	p, err := partitionkey.ParsePath(path)
	if err != nil {
		return p, &Error{Kind: ErrBadRequest, Message: err.Error()}
	}
	return p, nil
}

// KeyText returns the identity text of a partition-key value, equal for
// equal values (see partitionkey.IdentityText): RFC 8785 JSON for a string,
// number (any Go number type), bool, Null (or nil), and NoneText for None.
// Other types wrap ErrBadRequest.
//
// It is kept only for the router, its last caller, and goes when the router
// is ported: new code uses partitionkey.IdentityText, and BadPartitionKey
// for its errors. It is not marked deprecated yet only because staticcheck
// would then fail on the router.
func KeyText(v any) (string, error) {
	t, err := partitionkey.IdentityText(v)
	if err != nil {
		return "", BadPartitionKey(err)
	}
	return t, nil
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
