package partitionkey

import (
	"errors"
	"fmt"
	"strings"
)

// MaxPaths is the most paths a hierarchical key has: Cosmos DB's MultiHash
// containers take 2 or 3.
const MaxPaths = 3

// Paths is a collection's partition-key definition: one path (Cosmos DB's
// kind Hash) or, for a hierarchical key, 2 to MaxPaths of them (kind
// MultiHash), whose key is the CompositeKey of the values at those paths, in
// order. A Paths is immutable once built; ParsePaths builds one.
type Paths []Path

// ParsePaths parses a collection's partition-key paths, each as ParsePath
// does: one path, or 2 to MaxPaths for a hierarchical key, none named twice
// nor one inside another ("/a" and "/a/b": the value at "/a" would be an
// object). Errors are *PathError naming the path at fault. It costs a
// ParsePath per path.
func ParsePaths(paths ...string) (Paths, error) {
	switch {
	case len(paths) == 0:
		return nil, &PathError{Reason: "no partition-key path; give one, as in /userId, or 2 to 3 for a hierarchical key"}
	case len(paths) > MaxPaths:
		return nil, &PathError{Path: strings.Join(paths, ", "), Reason: fmt.Sprintf("%d paths: a hierarchical key has at most %d", len(paths), MaxPaths)}
	}
	ps := make(Paths, 0, len(paths))
	for _, s := range paths {
		p, err := ParsePath(s)
		if err != nil {
			return nil, err
		}
		for _, q := range ps {
			if p.HasPrefix(q) || q.HasPrefix(p) {
				return nil, &PathError{Path: s, Reason: fmt.Sprintf("repeats or overlaps the path %s: a hierarchical key's paths name distinct scalar values", q)}
			}
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// Hierarchical reports whether the definition has several paths (a
// MultiHash key).
func (ps Paths) Hierarchical() bool { return len(ps) > 1 }

// Strings returns the paths as written.
func (ps Paths) Strings() []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// String returns the paths as written, joined by ", ".
func (ps Paths) String() string { return strings.Join(ps.Strings(), ", ") }

// AppendDocIdentity appends the identity text of the key the raw JSON
// document doc holds at ps: for one path, the value's identity text
// (RawValue.AppendIdentity), NoneText when doc has no value there; for a
// hierarchical key, the composite identity text of the values
// (AppendCompositeIdentity), a missing one None in its place. An object or
// array at a path is an error wrapping ErrKeyType; malformed JSON before a
// value reads as no value. It does not allocate when dst has room.
func (ps Paths) AppendDocIdentity(dst, doc []byte) ([]byte, error) {
	if len(ps) == 1 {
		return appendDocPart(dst, doc, ps[0], NoneText)
	}
	dst = append(dst, '[')
	for i, p := range ps {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendDocPart(dst, doc, p, noneInComposite); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

func appendDocPart(dst, doc []byte, p Path, none string) ([]byte, error) {
	v, err := p.Lookup(doc)
	switch {
	case errors.Is(err, ErrNoPartitionKey):
		return append(dst, none...), nil
	case err != nil:
		return dst, err
	}
	return v.AppendIdentity(dst)
}

// noneInComposite is how None is written inside a composite identity text:
// {} as Cosmos DB writes the undefined value in a partition-key header.
const noneInComposite = "{}"

// AppendCompositeIdentity appends the identity text of a hierarchical key
// made of parts, the text a store indexes it by: the JSON array of the
// parts' identity texts (IdentityText), with None written {} (as Cosmos DB
// writes the undefined value in x-ms-documentdb-partitionkey), so
// ["eu",42] and ["eu",{}]. Each part's text is self-delimiting, so the key
// texts that start with a prefix's text less its closing bracket, followed
// by a comma, are exactly the keys with that prefix (CompositePrefix). An
// empty parts or a part without an identity text is an error wrapping
// ErrKeyType. It does not allocate when dst has room.
func AppendCompositeIdentity(dst []byte, parts []any) ([]byte, error) {
	return appendComposite(dst, parts, true)
}

// CompositePrefix returns what every composite identity text of a key that
// starts with the parts of text (itself a composite identity text) starts
// with, and no other does: text with its closing bracket replaced by a
// comma. It allocates the result.
func CompositePrefix(text string) string {
	return strings.TrimSuffix(text, "]") + ","
}

// Parts returns the parts of a composite key (a CompositeKey or []any):
// ok is false for any other key.
func Parts(key any) (parts []any, ok bool) { return composite(key) }
