// Package link parses and builds Cosmos DB resource links: "dbs/{db}" for a
// database and "dbs/{db}/colls/{coll}" for a collection.
//
// A link is kept verbatim wherever it is hashed or compared (a trailing slash,
// as the .NET SDK wrote links, changes the ring placement), so Parse reports
// the parts without rewriting the link itself.
package link

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalid is wrapped by every error this package returns.
var ErrInvalid = errors.New("invalid link")

// Collection is a parsed collection link.
type Collection struct {
	Database   string // the database id
	Collection string // the collection id
}

// String returns the canonical link "dbs/{db}/colls/{coll}".
func (c Collection) String() string {
	return "dbs/" + c.Database + "/colls/" + c.Collection
}

// DatabaseLink returns "dbs/{db}".
func (c Collection) DatabaseLink() string { return "dbs/" + c.Database }

// ParseCollection parses "dbs/{db}/colls/{coll}", with an optional leading or
// trailing slash. Ids must be non-empty and must not contain '/', '\\', '?'
// or '#'. It costs one pass over the link and no allocation: the ids are
// substrings of s.
func ParseCollection(s string) (Collection, error) {
	t := strings.TrimSuffix(strings.TrimPrefix(s, "/"), "/")
	rest, ok := strings.CutPrefix(t, "dbs/")
	db, coll, ok2 := strings.Cut(rest, "/colls/")
	if !ok || !ok2 || strings.Contains(coll, "/") {
		if t == "" {
			return Collection{}, fmt.Errorf("%w: empty", ErrInvalid)
		}
		return Collection{}, fmt.Errorf("%w %q: want dbs/{db}/colls/{coll}", ErrInvalid, s)
	}
	if err := checkID(s, db); err != nil {
		return Collection{}, err
	}
	if err := checkID(s, coll); err != nil {
		return Collection{}, err
	}
	return Collection{Database: db, Collection: coll}, nil
}

// Canonical returns the canonical form of a collection link,
// "dbs/{db}/colls/{coll}": s itself when it already is (no allocation).
func Canonical(s string) (string, error) {
	c, err := ParseCollection(s)
	if err != nil {
		return "", err
	}
	if len(s) == len(c.Database)+len(c.Collection)+len("dbs//colls/") {
		return s, nil
	}
	return c.String(), nil
}

// ParseDatabase parses "dbs/{db}" (optional leading or trailing slash) and
// returns the database id.
func ParseDatabase(s string) (string, error) {
	parts, err := split(s)
	if err != nil {
		return "", err
	}
	if len(parts) != 2 || parts[0] != "dbs" {
		return "", fmt.Errorf("%w %q: want dbs/{db}", ErrInvalid, s)
	}
	if err := checkID(s, parts[1]); err != nil {
		return "", err
	}
	return parts[1], nil
}

// DatabaseOf returns the database link ("dbs/{db}") of a collection link.
func DatabaseOf(collectionLink string) (string, error) {
	c, err := ParseCollection(collectionLink)
	if err != nil {
		return "", err
	}
	return c.DatabaseLink(), nil
}

// Same reports whether two collection links name the same collection,
// ignoring leading and trailing slashes.
func Same(a, b string) bool {
	return strings.Trim(a, "/") == strings.Trim(b, "/")
}

func split(s string) ([]string, error) {
	t := strings.TrimPrefix(s, "/")
	t = strings.TrimSuffix(t, "/")
	if t == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalid)
	}
	return strings.Split(t, "/"), nil
}

func checkID(s, id string) error {
	if id == "" {
		return fmt.Errorf("%w %q: empty id", ErrInvalid, s)
	}
	if strings.ContainsAny(id, `/\?#`) {
		return fmt.Errorf("%w %q: id %q contains one of \\ ? #", ErrInvalid, s, id)
	}
	if strings.IndexByte(id, 0) >= 0 {
		return fmt.Errorf("%w %q: id %q contains a NUL character", ErrInvalid, s, id)
	}
	if !utf8.ValidString(id) {
		return fmt.Errorf("%w %q: id %q is not valid UTF-8", ErrInvalid, s, id)
	}
	return nil
}
