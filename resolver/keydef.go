package resolver

import (
	"encoding/json"
	"strings"
)

// KeyDef is a parsed partitionKey setting: one Cosmos DB JSON path
// ("/userId", "/a/b", `/"name with space"`) or several (a composite key).
// The zero KeyDef has no path; PartitionKey on a resolver without one is an
// error wrapping ErrNoPartitionKey. A KeyDef is immutable.
//
// In JSON a KeyDef is a string for one path and an array of strings for a
// composite key.
type KeyDef struct {
	paths []Path
}

// Path is one parsed partition-key path.
type Path struct {
	text     string   // as written
	segments []string // unescaped property names
}

// String returns the path as written.
func (p Path) String() string { return p.text }

// Segments returns the property names the path walks, unescaped.
func (p Path) Segments() []string { return append([]string(nil), p.segments...) }

// ParsePath parses one Cosmos DB partition-key path.
//
// TEMPORARY minimal implementation (plain segments only); the full parser
// with quoted segments lands with the key-extraction work.
func ParsePath(s string) (Path, error) {
	if !strings.HasPrefix(s, "/") || len(s) < 2 {
		return Path{}, Invalid("partitionKey", s, "a path starts with '/' and names a property")
	}
	return Path{text: s, segments: strings.Split(s[1:], "/")}, nil
}

// ParseKeyDef parses one path (a single key) or several (a composite key).
func ParseKeyDef(paths ...string) (KeyDef, error) {
	d := KeyDef{paths: make([]Path, 0, len(paths))}
	for _, s := range paths {
		p, err := ParsePath(s)
		if err != nil {
			return KeyDef{}, err
		}
		d.paths = append(d.paths, p)
	}
	return d, nil
}

// MustKeyDef is ParseKeyDef for paths known to be valid; it panics otherwise.
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
		out[i] = p.text
	}
	return out
}

// Composite reports whether the KeyDef has more than one path.
func (d KeyDef) Composite() bool { return len(d.paths) > 1 }

// Extract returns the partition key of doc (see Resolver.PartitionKey).
//
// TEMPORARY minimal implementation (decodes the whole document); the
// zero-copy scanner lands with the key-extraction work.
func (d KeyDef) Extract(doc any) (any, error) {
	if d.IsZero() {
		return nil, &KeyError{Err: ErrNoPartitionKey, Reason: "the resolver has no partitionKey"}
	}
	var m map[string]any
	switch v := doc.(type) {
	case map[string]any:
		m = v
	case []byte:
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, err
		}
	case json.RawMessage:
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, err
		}
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
	}
	vals := make([]any, 0, len(d.paths))
	for _, p := range d.paths {
		var cur any = m
		for _, seg := range p.segments {
			obj, ok := cur.(map[string]any)
			if !ok {
				return nil, &KeyError{Path: p.text, Err: ErrNoPartitionKey}
			}
			if cur, ok = obj[seg]; !ok {
				return nil, &KeyError{Path: p.text, Err: ErrNoPartitionKey}
			}
		}
		vals = append(vals, cur)
	}
	if len(vals) == 1 {
		return vals[0], nil
	}
	return CompositeKey(vals), nil
}

// MarshalJSON writes one path as a string and several as an array.
func (d KeyDef) MarshalJSON() ([]byte, error) {
	if len(d.paths) == 1 {
		return json.Marshal(d.paths[0].text)
	}
	return json.Marshal(d.Paths())
}

// UnmarshalJSON reads a path string or an array of path strings.
func (d *KeyDef) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		kd, err := ParseKeyDef(one)
		if err != nil {
			return err
		}
		*d = kd
		return nil
	}
	var many []string
	if err := json.Unmarshal(data, &many); err != nil || len(many) == 0 {
		return Invalid("partitionKey", string(data), "want a path string or a non-empty array of path strings")
	}
	kd, err := ParseKeyDef(many...)
	if err != nil {
		return err
	}
	*d = kd
	return nil
}
