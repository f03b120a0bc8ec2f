package resolver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"
)

// KeyDef is a parsed partitionKey setting: one Cosmos DB JSON path
// ("/userId", "/a/b", `/"name with space"`) or several, which make a
// composite key. The zero KeyDef has no path; extracting with it is an error
// wrapping ErrNoPartitionKey (a resolver nested in another one is handed
// keys, never documents, and needs none). A KeyDef is immutable and safe for
// concurrent use.
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

// ParsePath parses one Cosmos DB partition-key path: a '/' before every
// property name; a name is either plain (any characters but '/', '"', and
// the wildcard and index characters '*', '[', ']', '?') or quoted in double
// quotes, where \" and \\ stand for a quote and a backslash. Array indexes
// and wildcards are not part of partition-key paths. Errors are
// *ConfigError naming the path and the byte offset.
func ParsePath(s string) (Path, error) {
	bad := func(pos int, reason string) (Path, error) {
		return Path{}, &ConfigError{Field: "partitionKey", Value: s, Reason: fmt.Sprintf("at byte %d: %s", pos, reason)}
	}
	if s == "" {
		return bad(0, "empty path")
	}
	if !utf8.ValidString(s) {
		return bad(0, "not valid UTF-8")
	}
	var segs []string
	i := 0
	for i < len(s) {
		if s[i] != '/' {
			return bad(i, "want '/' before a property name")
		}
		i++
		if i == len(s) {
			return bad(i, "empty property name (trailing '/')")
		}
		if s[i] == '"' {
			var b strings.Builder
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' {
					if i+1 == len(s) || (s[i+1] != '"' && s[i+1] != '\\') {
						return bad(i, `only \" and \\ are escapes in a quoted name`)
					}
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(c)
				i++
			}
			if !closed {
				return bad(len(s), "unterminated quoted name")
			}
			if i < len(s) && s[i] != '/' {
				return bad(i, "want '/' after a quoted name")
			}
			segs = append(segs, b.String())
			continue
		}
		start := i
		for i < len(s) && s[i] != '/' {
			switch s[i] {
			case '"':
				return bad(i, `a '"' may only open a quoted name`)
			case '*', '[', ']', '?':
				return bad(i, fmt.Sprintf("%q: array indexes and wildcards are not part of a partition-key path", s[i]))
			}
			i++
		}
		if i == start {
			return bad(i, "empty property name")
		}
		segs = append(segs, s[start:i])
	}
	return Path{text: s, segments: segs}, nil
}

// ParseKeyDef parses one path (a single key) or several (a composite key).
func ParseKeyDef(paths ...string) (KeyDef, error) {
	if len(paths) == 0 {
		return KeyDef{}, Invalid("partitionKey", nil, "no path")
	}
	d := KeyDef{paths: make([]Path, 0, len(paths))}
	seen := make(map[string]bool, len(paths))
	for i, s := range paths {
		p, err := ParsePath(s)
		if err != nil {
			if len(paths) > 1 {
				var ce *ConfigError
				if asConfig(err, &ce) {
					ce.Field = fmt.Sprintf("partitionKey[%d]", i)
				}
			}
			return KeyDef{}, err
		}
		key := strings.Join(p.segments, "\x00")
		if seen[key] {
			return KeyDef{}, Invalid(fmt.Sprintf("partitionKey[%d]", i), s, "repeats an earlier path")
		}
		seen[key] = true
		d.paths = append(d.paths, p)
	}
	return d, nil
}

func asConfig(err error, target **ConfigError) bool {
	ce, ok := err.(*ConfigError)
	if ok {
		*target = ce
	}
	return ok
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
		out[i] = p.text
	}
	return out
}

// Composite reports whether the KeyDef has more than one path.
func (d KeyDef) Composite() bool { return len(d.paths) > 1 }

// Null is the partition key of a document whose value at the key path is
// JSON null (a nil Go pointer or interface in a struct). It differs from a
// missing key, which is an error wrapping ErrNoPartitionKey. Cosmos DB
// accepts null keys; the hash ring does not (ErrKeyType).
var Null = nullKey{}

type nullKey struct{}

func (nullKey) String() string { return "null" }

// MarshalJSON writes null.
func (nullKey) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// Extract returns the partition key of doc:
//
//   - raw JSON ([]byte, json.RawMessage, or a string holding the document's
//     JSON text) is scanned without being unmarshalled: the scanner skips
//     what it does not need and stops at the key. The document is checked
//     only up to the key;
//   - map[string]any (and maps with string keys of any value type) are
//     walked;
//   - structs and pointers to structs are read through their json tags
//     (embedded structs promoted as encoding/json does), with the field
//     lookup cached per type.
//
// A key is returned as a string, a float64 (raw JSON and maps) or the Go
// number type of a struct field, a bool, Null, or (for a composite KeyDef) a
// CompositeKey of those. A missing value is an error wrapping
// ErrNoPartitionKey naming the path; an object or array at the path wraps
// ErrKeyType. A string key from raw JSON costs one copy.
func (d KeyDef) Extract(doc any) (any, error) {
	if d.IsZero() {
		return nil, &KeyError{Err: ErrNoPartitionKey, Reason: "the resolver has no partitionKey path to read documents with"}
	}
	if len(d.paths) == 1 {
		return extractPath(doc, d.paths[0])
	}
	out := make(CompositeKey, len(d.paths))
	for i, p := range d.paths {
		v, err := extractPath(doc, p)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func extractPath(doc any, p Path) (any, error) {
	switch v := doc.(type) {
	case []byte:
		return extractRaw(v, p)
	case json.RawMessage:
		return extractRaw(v, p)
	case string:
		return extractRaw([]byte(v), p)
	case map[string]any:
		return extractMap(v, p)
	case nil:
		return nil, &KeyError{Path: p.text, Err: ErrNoPartitionKey, Reason: "the document is nil"}
	}
	return extractReflect(reflect.ValueOf(doc), p)
}

func extractMap(m map[string]any, p Path) (any, error) {
	var cur any = m
	for i, seg := range p.segments {
		obj, ok := cur.(map[string]any)
		if !ok {
			if i > 0 {
				// Not a plain map: let reflection walk the rest.
				return extractReflect(reflect.ValueOf(cur), Path{text: p.text, segments: p.segments[i:]})
			}
			return nil, missing(p)
		}
		if cur, ok = obj[seg]; !ok {
			return nil, missing(p)
		}
	}
	return scalar(cur, p)
}

func missing(p Path) error {
	return &KeyError{Path: p.text, Err: ErrNoPartitionKey}
}

// scalar converts a Go value found at the path to a key.
func scalar(v any, p Path) (any, error) {
	switch x := v.(type) {
	case nil:
		return Null, nil
	case string, bool, float64, json.Number, time.Time:
		return x, nil
	case map[string]any, []any:
		return nil, &KeyError{Path: p.text, Err: ErrKeyType, Reason: "the value is an object or array"}
	}
	if _, ok, _ := Number(v); ok {
		return v, nil
	}
	return extractReflectScalar(reflect.ValueOf(v), p)
}

// extractRaw scans raw JSON for the path.
func extractRaw(doc []byte, p Path) (any, error) {
	return extractRawScan(scanner{data: doc}, p)
}

func extractRawScan(s scanner, p Path) (any, error) {
	for _, seg := range p.segments {
		found, err := s.findMember(seg)
		if err != nil {
			return nil, &KeyError{Path: p.text, Err: ErrNoPartitionKey, Reason: "malformed JSON: " + err.Error()}
		}
		if !found {
			return nil, missing(p)
		}
	}
	v, err := s.scalar()
	if err != nil {
		var ke *KeyError
		if asKeyError(err, &ke) {
			ke.Path = p.text
			return nil, ke
		}
		return nil, &KeyError{Path: p.text, Err: ErrNoPartitionKey, Reason: "malformed JSON: " + err.Error()}
	}
	return v, nil
}

func asKeyError(err error, target **KeyError) bool {
	ke, ok := err.(*KeyError)
	if ok {
		*target = ke
	}
	return ok
}

// scanner walks raw JSON without building it.
type scanner struct {
	data   []byte
	pos    int
	borrow bool // unescaped string keys alias data instead of copying it
}

type syntaxError struct {
	pos int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.pos) }

func (s *scanner) fail(msg string) error { return &syntaxError{pos: s.pos, msg: msg} }

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// findMember expects an object at the current position and moves to the
// value of member name. It reports false when the value there is not an
// object or has no such member.
func (s *scanner) findMember(name string) (bool, error) {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return false, s.fail("unexpected end of JSON")
	}
	if s.data[s.pos] != '{' {
		return false, nil
	}
	s.pos++
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		return false, nil
	}
	for {
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return false, s.fail("want a member name")
		}
		match, err := s.nameEquals(name)
		if err != nil {
			return false, err
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return false, s.fail("want ':' after a member name")
		}
		s.pos++
		s.skipSpace()
		if match {
			return true, nil
		}
		if err := s.skipValue(); err != nil {
			return false, err
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return false, s.fail("unexpected end of JSON")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			return false, nil
		default:
			return false, s.fail("want ',' or '}' in an object")
		}
	}
}

// nameEquals reads the string at pos (a member name) and reports whether
// it equals name, decoding escapes only when the raw text has them.
func (s *scanner) nameEquals(name string) (bool, error) {
	start := s.pos + 1
	end, escaped, err := s.stringEnd()
	if err != nil {
		return false, err
	}
	raw := s.data[start:end]
	s.pos = end + 1
	if !escaped {
		return string(raw) == name, nil
	}
	dec, err := unescape(raw)
	if err != nil {
		return false, &syntaxError{pos: start, msg: err.Error()}
	}
	return dec == name, nil
}

// stringEnd finds the closing quote of the string starting at pos.
func (s *scanner) stringEnd() (end int, escaped bool, err error) {
	for i := s.pos + 1; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			return i, escaped, nil
		case c == '\\':
			escaped = true
			i++
		case c < 0x20:
			s.pos = i
			return 0, false, s.fail("control character in a string")
		}
	}
	s.pos = len(s.data)
	return 0, false, s.fail("unterminated string")
}

// skipValue moves past one JSON value.
func (s *scanner) skipValue() error {
	if s.pos >= len(s.data) {
		return s.fail("unexpected end of JSON")
	}
	switch c := s.data[s.pos]; c {
	case '"':
		end, _, err := s.stringEnd()
		if err != nil {
			return err
		}
		s.pos = end + 1
		return nil
	case '{', '[':
		depth := 0
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case '"':
				end, _, err := s.stringEnd()
				if err != nil {
					return err
				}
				s.pos = end
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.pos++
					return nil
				}
			}
			s.pos++
		}
		return s.fail("unterminated object or array")
	default:
		start := s.pos
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if s.pos == start {
					return s.fail("want a value")
				}
				return nil
			}
			s.pos++
		}
		if s.pos == start {
			return s.fail("want a value")
		}
		return nil
	}
}

// scalar decodes the value at pos as a key.
func (s *scanner) scalar() (any, error) {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return nil, s.fail("unexpected end of JSON")
	}
	switch c := s.data[s.pos]; {
	case c == '"':
		start := s.pos + 1
		end, escaped, err := s.stringEnd()
		if err != nil {
			return nil, err
		}
		if !escaped {
			if s.borrow && end > start {
				return unsafe.String(&s.data[start], end-start), nil
			}
			return string(s.data[start:end]), nil
		}
		v, err := unescape(s.data[start:end])
		if err != nil {
			return nil, &syntaxError{pos: start, msg: err.Error()}
		}
		return v, nil
	case c == '{' || c == '[':
		return nil, &KeyError{Err: ErrKeyType, Reason: "the value is an object or array"}
	default:
		start := s.pos
		if err := s.skipValue(); err != nil {
			return nil, err
		}
		tok := s.data[start:s.pos]
		switch string(tok) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "null":
			return Null, nil
		}
		if !validNumber(tok) {
			return nil, &syntaxError{pos: start, msg: fmt.Sprintf("invalid value %q", tok)}
		}
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil {
			return nil, &KeyError{Err: ErrKeyType, Reason: fmt.Sprintf("number %s is out of range", tok)}
		}
		return f, nil
	}
}

// validNumber checks JSON number syntax: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i == len(b) {
		return false
	}
	if b[i] == '0' {
		i++
	} else if b[i] >= '1' && b[i] <= '9' {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	} else {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(b)
}

// unescape decodes the body of a JSON string with escapes; it uses
// encoding/json on the quoted text, which handles \uXXXX surrogate pairs and
// rejects bad escapes.
func unescape(raw []byte) (string, error) {
	q := make([]byte, 0, len(raw)+2)
	q = append(q, '"')
	q = append(q, raw...)
	q = append(q, '"')
	var out string
	if err := json.Unmarshal(q, &out); err != nil {
		return "", fmt.Errorf("bad escape in a string")
	}
	return out, nil
}

// ExtractBorrowed is Extract for raw JSON that does not copy a string key:
// the returned string aliases doc's bytes, so it is valid only while doc is
// not modified. It saves the copy for callers that use the key at once and
// keep nothing of it (the router places a new document this way). Keys with
// escapes, numbers and composite keys are built as Extract builds them.
func (d KeyDef) ExtractBorrowed(doc []byte) (any, error) {
	if len(d.paths) != 1 {
		return d.Extract(doc)
	}
	return extractRawScan(scanner{data: doc, borrow: true}, d.paths[0])
}

// MarshalJSON writes one path as a string and several as an array.
func (d KeyDef) MarshalJSON() ([]byte, error) {
	if len(d.paths) == 1 {
		return json.Marshal(d.paths[0].text)
	}
	return json.Marshal(d.Paths())
}

// UnmarshalJSON reads a path string or a non-empty array of path strings.
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
