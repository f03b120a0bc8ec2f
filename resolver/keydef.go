package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unsafe"
)

// KeyDef is a parsed partitionKey setting: one Cosmos DB JSON path
// ("/userId", "/a/b", `/"name with space"`) or several, which make a
// composite key. The zero KeyDef has no path; extracting with it is an error
// wrapping ErrNoPartitionKey (a resolver nested in another one is handed
// keys, never documents, and needs none). A KeyDef is immutable and safe for
// concurrent use.
//
// In JSON a KeyDef is a string for one path, an array of strings for a
// composite key, and null for none.
type KeyDef struct {
	paths []Path
}

// ParseKeyDef parses one path (a single key) or several (a composite key),
// each as ParsePath does. A composite key may not name a path twice, nor a
// path and one inside it ("/a" and "/a/b": the value at "/a" would be an
// object). Errors are *ConfigError for the field "partitionKey" (one path)
// or "partitionKey[i]" (several).
func ParseKeyDef(paths ...string) (KeyDef, error) {
	if len(paths) == 0 {
		return KeyDef{}, Invalid("partitionKey", nil, "no path")
	}
	d := KeyDef{paths: make([]Path, 0, len(paths))}
	for i, s := range paths {
		p, err := ParsePath(s)
		if err != nil {
			if len(paths) > 1 {
				var ce *ConfigError
				if errors.As(err, &ce) {
					ce.Field = fmt.Sprintf("partitionKey[%d]", i)
				}
			}
			return KeyDef{}, err
		}
		for j, q := range d.paths {
			switch {
			case p.HasPrefix(q) && q.HasPrefix(p):
				return KeyDef{}, Invalid(fmt.Sprintf("partitionKey[%d]", i), s, fmt.Sprintf("repeats partitionKey[%d] %s", j, q))
			case p.HasPrefix(q), q.HasPrefix(p):
				return KeyDef{}, Invalid(fmt.Sprintf("partitionKey[%d]", i), s, fmt.Sprintf("overlaps partitionKey[%d] %s: one path lies inside the other, so the outer value would be an object", j, q))
			}
		}
		d.paths = append(d.paths, p)
	}
	return d, nil
}

// MustKeyDef is ParseKeyDef for paths known to be valid; it panics
// otherwise. Meant for tests, examples and package-level variables.
func MustKeyDef(paths ...string) KeyDef {
	d, err := ParseKeyDef(paths...)
	if err != nil {
		panic(err)
	}
	return d
}

// IsZero reports whether the KeyDef has no path.
func (d KeyDef) IsZero() bool { return len(d.paths) == 0 }

// Paths returns the paths as written.
func (d KeyDef) Paths() []string {
	out := make([]string, len(d.paths))
	for i, p := range d.paths {
		out[i] = p.String()
	}
	return out
}

// Composite reports whether the KeyDef has more than one path.
func (d KeyDef) Composite() bool { return len(d.paths) > 1 }

// String returns the path, or the paths joined by ", ".
func (d KeyDef) String() string { return strings.Join(d.Paths(), ", ") }

// Extract returns the partition key of doc: the value at each path, the same
// whichever form the document takes:
//
//   - raw JSON ([]byte, json.RawMessage, or a string holding JSON text) is
//     scanned, not unmarshalled: the scanner checks the syntax of what it
//     passes over, skips what it does not need and stops at the key. The rest
//     of the document is not read, so malformed JSON after the key goes
//     unnoticed, and of a name repeated in one object the first counts
//     (encoding/json keeps the last);
//   - map[string]any and map[string]string are walked directly, other maps
//     (string, integer or encoding.TextMarshaler keys) through reflection;
//   - structs, pointers and interfaces are read as encoding/json would write
//     them: json tags (names, "-", omitempty and omitzero, which make an empty
//     field a missing key, and ",string"), embedded structs promoted, field
//     lookup cached per type; a value with its own MarshalJSON or MarshalText
//     (time.Time, json.RawMessage, ...) and a []byte (base64) are marshalled
//     and the JSON scanned.
//
// A key is returned as the document's JSON has it: a string, a float64 (every
// number, whatever its Go type: integers beyond 2^53 round, as any JSON
// reader rounds them), a bool, or Null; a composite KeyDef returns a
// CompositeKey of those, in path order. A missing value is a *KeyError
// wrapping ErrNoPartitionKey naming the path (malformed JSON before the key
// too, with the byte offset); an object or array at the path, a NaN or an
// infinity wraps ErrKeyType.
//
// Cost: a string key from []byte or json.RawMessage is copied (the caller
// may reuse its buffer), so raw extraction of a string allocates twice (the
// copy and the interface box); from a string document the key is a substring
// of it, one allocation. ExtractBorrowed saves the copy; ExtractRaw and
// AppendKey allocate nothing.
func (d KeyDef) Extract(doc any) (any, error) {
	return d.extract(doc, false)
}

// ExtractBorrowed is Extract for raw JSON that does not copy a string key:
// the returned string aliases doc's bytes, so it is valid only while doc is
// not modified. It saves the copy for callers that use the key at once and
// keep nothing of it (the router places a new document this way). Strings
// with escapes are decoded into new memory, as Extract decodes them.
func (d KeyDef) ExtractBorrowed(doc []byte) (any, error) {
	if len(d.paths) == 1 {
		return extractRaw(doc, &d.paths[0], true)
	}
	return d.extract(doc, true)
}

func (d KeyDef) extract(doc any, borrow bool) (any, error) {
	switch len(d.paths) {
	case 0:
		return nil, &KeyError{Err: ErrNoPartitionKey, Reason: "the resolver has no partitionKey path to read documents with"}
	case 1:
		return extractPath(doc, &d.paths[0], borrow)
	}
	out := make(CompositeKey, len(d.paths))
	for i := range d.paths {
		v, err := extractPath(doc, &d.paths[i], borrow)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// ExtractRaw reads the value at each path of the KeyDef from raw JSON and
// appends it to dst, in path order, without allocating (given room in dst):
// each RawValue views doc's bytes and is valid only while they are not
// modified. The document is checked as Extract checks it; the errors are
// Extract's, except that a number beyond float64's range is only reported
// when the value is read (RawValue.Float, AppendKey).
func (d KeyDef) ExtractRaw(doc []byte, dst []RawValue) ([]RawValue, error) {
	if len(d.paths) == 0 {
		return dst, &KeyError{Err: ErrNoPartitionKey, Reason: "the resolver has no partitionKey path to read documents with"}
	}
	for i := range d.paths {
		v, err := d.paths[i].Lookup(doc)
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// AppendKey appends the canonical text of the partition key of the raw JSON
// document doc (the text AppendKey(dst, d.Extract(doc)) gives) to dst: the
// bytes a hash ring hashes. It allocates nothing for up to 8 paths when dst
// has room. A boolean or null key (outside a composite key) is an error
// wrapping ErrKeyType; other errors are Extract's.
func (d KeyDef) AppendKey(dst, doc []byte) ([]byte, error) {
	var buf [8]RawValue
	vals, err := d.ExtractRaw(doc, buf[:0])
	if err != nil {
		return dst, err
	}
	out, err := AppendRawKey(dst, vals)
	if err != nil {
		var ke *KeyError
		if errors.As(err, &ke) && len(vals) == 1 {
			ke.Path = d.paths[0].String()
		}
		return dst, err
	}
	return out, nil
}

func extractPath(doc any, p *Path, borrow bool) (any, error) {
	switch v := doc.(type) {
	case []byte:
		return extractRaw(v, p, borrow)
	case json.RawMessage:
		return extractRaw(v, p, borrow)
	case string:
		// A string is immutable: its substrings are safe to return.
		return extractRaw(unsafe.Slice(unsafe.StringData(v), len(v)), p, true)
	case map[string]any:
		return walkMap(v, p, 0)
	case map[string]string:
		if p.Len() == 1 {
			if s, ok := v[p.Segment(0)]; ok {
				return s, nil
			}
		}
		return nil, missing(p)
	case nil:
		return nil, &KeyError{Path: p.String(), Err: ErrNoPartitionKey, Reason: "the document is nil"}
	}
	return extractReflect(reflect.ValueOf(doc), p, 0)
}

func missing(p *Path) error {
	return &KeyError{Path: p.String(), Err: ErrNoPartitionKey}
}

// scalarKey turns a RawValue found at p into a key; borrow lets a string
// without escapes view the document's bytes instead of copying them.
func scalarKey(v RawValue, p *Path, borrow bool) (any, error) {
	var k any
	var err error
	if borrow {
		k, err = v.BorrowedValue()
	} else {
		k, err = v.Value()
	}
	if err != nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			ke.Path = p.String()
		}
		return nil, err
	}
	return k, nil
}

func extractRaw(doc []byte, p *Path, borrow bool) (any, error) {
	v, err := p.Lookup(doc)
	if err != nil {
		return nil, err
	}
	return scalarKey(v, p, borrow)
}

// MarshalJSON writes one path as a string, several as an array, and none as
// null.
func (d KeyDef) MarshalJSON() ([]byte, error) {
	switch len(d.paths) {
	case 0:
		return []byte("null"), nil
	case 1:
		return json.Marshal(d.paths[0].String())
	}
	return json.Marshal(d.Paths())
}

// UnmarshalJSON reads a path string or a non-empty array of path strings;
// null leaves the KeyDef as it is. Errors are *ConfigError.
func (d *KeyDef) UnmarshalJSON(data []byte) error {
	var paths []string
	switch t := strings.TrimSpace(string(data)); {
	case t == "null":
		return nil
	case strings.HasPrefix(t, `"`):
		var one string
		if err := json.Unmarshal(data, &one); err != nil {
			return Invalid("partitionKey", t, "malformed JSON string")
		}
		paths = []string{one}
	default:
		if err := json.Unmarshal(data, &paths); err != nil || len(paths) == 0 {
			return Invalid("partitionKey", t, "want a path string or a non-empty array of path strings")
		}
	}
	kd, err := ParseKeyDef(paths...)
	if err != nil {
		return err
	}
	*d = kd
	return nil
}
