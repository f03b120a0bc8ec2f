package store

import (
	"errors"
	"fmt"
	"slices"

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

// KeyPaths returns the collection's partition-key paths as written: the
// hierarchical key's when PartitionKeyPaths holds several, else the one
// path ("/id" when PartitionKeyPath is empty). It allocates the slice.
func (s *CollectionSpec) KeyPaths() []string {
	if len(s.PartitionKeyPaths) > 1 {
		return slices.Clone(s.PartitionKeyPaths)
	}
	if len(s.PartitionKeyPaths) == 1 && s.PartitionKeyPath == "" {
		return []string{s.PartitionKeyPaths[0]}
	}
	return []string{orID(s.PartitionKeyPath)}
}

// Hierarchical reports whether the spec's key is hierarchical (Cosmos DB's
// MultiHash kind: PartitionKeyPaths holds 2 or 3 paths).
func (s *CollectionSpec) Hierarchical() bool { return len(s.PartitionKeyPaths) > 1 }

// checkKeyPaths validates and normalises sp's key paths (see CheckSpec).
func checkKeyPaths(sp *CollectionSpec) (partitionkey.Paths, error) {
	switch n := len(sp.PartitionKeyPaths); {
	case n == 0:
	case n == 1 && (sp.PartitionKeyPath == "" || sp.PartitionKeyPath == sp.PartitionKeyPaths[0]):
		sp.PartitionKeyPath, sp.PartitionKeyPaths = sp.PartitionKeyPaths[0], nil
	case sp.PartitionKeyPath != "":
		return nil, &Error{Kind: ErrBadRequest, Message: fmt.Sprintf("partitionKeyPath %s beside partitionKeyPaths %v: give one of them (several paths make a hierarchical key)", sp.PartitionKeyPath, sp.PartitionKeyPaths)}
	default:
		paths, err := partitionkey.ParsePaths(sp.PartitionKeyPaths...)
		if err != nil {
			return nil, &Error{Kind: ErrBadRequest, Message: err.Error()}
		}
		sp.PartitionKeyPaths = slices.Clone(sp.PartitionKeyPaths)
		return paths, nil
	}
	if sp.PartitionKeyPath == "" {
		sp.PartitionKeyPath = "/id"
	}
	p, err := parseKeyPath(sp.PartitionKeyPath)
	if err != nil {
		return nil, err
	}
	return partitionkey.Paths{p}, nil
}

// SameKeyPaths reports whether two collections' partition-key paths (as
// CollectionSpec.KeyPaths gives them) name the same properties in the same
// order, each pair compared as SameKeyPath compares. A path that does not
// parse is an error wrapping ErrBadRequest.
func SameKeyPaths(a, b []string) (bool, error) {
	if len(a) != len(b) {
		return false, nil
	}
	for i := range a {
		if same, err := SameKeyPath(a[i], b[i]); err != nil || !same {
			return false, err
		}
	}
	return true, nil
}

// KeyParts returns the values of key for a collection whose hierarchical
// key has n paths (CollectionSpec.PartitionKeyPaths): a
// partitionkey.CompositeKey or []any gives its parts, a lone scalar one
// part (a prefix of one value), None every part None. It takes the full
// key, and with prefix (queries and feeds) its first 1 to n-1 values too;
// any other number of values is an *Error wrapping ErrBadRequest that names
// the key and both counts. It allocates only for a scalar or None.
func KeyParts(key any, n int, prefix bool) ([]any, error) {
	parts, ok := partitionkey.Parts(key)
	switch {
	case ok:
	case key == None:
		parts = make([]any, n)
		for i := range parts {
			parts[i] = None
		}
	default:
		parts = []any{key}
	}
	if len(parts) == n || prefix && len(parts) > 0 && len(parts) < n {
		return parts, nil
	}
	what := "the full key"
	if prefix {
		what = "the full key or a prefix of it"
	}
	return nil, &Error{Kind: ErrBadRequest, Message: fmt.Sprintf("partition key %v has %d values, the collection's hierarchical key %d: give %s", key, len(parts), n, what)}
}
