package partitionkey

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/docshard/docshard/internal/jsontext"
)

// Path is one parsed partition-key path, such as "/userId", "/a/b" or
// `/"department name"`: the property names it walks, unescaped. The zero
// Path has no segment and finds nothing. A Path is immutable.
type Path struct {
	text     string   // as written
	segments []string // unescaped property names
}

// String returns the path as written.
func (p Path) String() string { return p.text }

// Segments returns the property names the path walks, unescaped. It copies
// the list; Len and Segment do not.
func (p Path) Segments() []string { return append([]string(nil), p.segments...) }

// Len returns the number of property names the path walks.
func (p Path) Len() int { return len(p.segments) }

// Segment returns the i-th property name, unescaped (0 ≤ i < Len).
func (p Path) Segment(i int) string { return p.segments[i] }

// HasPrefix reports whether p walks all of q's names first (p is q, or
// lies inside it).
func (p Path) HasPrefix(q Path) bool {
	if len(q.segments) > len(p.segments) {
		return false
	}
	for i, s := range q.segments {
		if p.segments[i] != s {
			return false
		}
	}
	return true
}

// ParsePath parses one Cosmos DB partition-key path. The grammar:
//
//	path    = 1*( "/" name )
//	name    = plain / quoted
//	plain   = 1*( any character but / " \ * ? [ ] space and control characters )
//	quoted  = DQUOTE *( character / \" / \\ ) DQUOTE    ; no control characters
//
// So "/userId", "/address/city", `/"department name"`, `/"a\"b"` and
// `/"a/b"` are paths; a name holding a space, a slash, a quote or a
// backslash must be quoted. Array indexes ("/tags[0]") and the index-policy
// wildcards "*" and "?" are not part of partition-key paths (Cosmos DB keys
// are scalars), so they are rejected, as are an empty path, a missing
// leading '/', empty names ("//", a trailing '/'), unterminated quotes,
// escapes other than \" and \\, and invalid UTF-8. A single quote is an
// ordinary character. `/""` names the empty property, which JSON allows.
//
// Errors are *PathError, naming the path and the byte offset of the
// problem. ParsePath costs one pass over s and an allocation per segment.
func ParsePath(s string) (Path, error) {
	bad := func(pos int, reason string) (Path, error) {
		return Path{}, &PathError{Path: s, Offset: pos, Reason: reason}
	}
	if s == "" {
		return bad(0, "empty path; a path starts with '/', as in /userId")
	}
	if !utf8.ValidString(s) {
		for i := 0; ; {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return bad(i, "not valid UTF-8")
			}
			i += size
		}
	}
	var segs []string
	i := 0
	for i < len(s) {
		if s[i] != '/' {
			return bad(i, "want '/' before a property name")
		}
		i++
		if i == len(s) {
			return bad(i, "empty property name (a trailing '/')")
		}
		if s[i] == '"' {
			open := i
			var b strings.Builder
			i++
			closed := false
			for i < len(s) && !closed {
				switch c := s[i]; {
				case c == '\\':
					if i+1 == len(s) || (s[i+1] != '"' && s[i+1] != '\\') {
						return bad(i, `only \" and \\ are escapes in a quoted name`)
					}
					b.WriteByte(s[i+1])
					i += 2
				case c == '"':
					closed = true
					i++
				case c < 0x20 || c == 0x7f:
					return bad(i, "control character in a quoted name")
				default:
					b.WriteByte(c)
					i++
				}
			}
			if !closed {
				return bad(open, "unterminated quoted name")
			}
			if i < len(s) && s[i] != '/' {
				return bad(i, "want '/' after a quoted name")
			}
			segs = append(segs, b.String())
			continue
		}
		start := i
		for ; i < len(s) && s[i] != '/'; i++ {
			switch c := s[i]; c {
			case '"':
				return bad(i, `a '"' may only open a quoted name (quote the whole name: /"a\"b")`)
			case '\\':
				return bad(i, `a '\' may only appear in a quoted name, as \" or \\`)
			case '[', ']':
				return bad(i, fmt.Sprintf("%q: array indexes are not part of a partition-key path (a key is a scalar)", c))
			case '*', '?':
				return bad(i, fmt.Sprintf("%q: index-policy wildcards are not part of a partition-key path", c))
			case ' ', '\t', '\n', '\r', '\f', '\v':
				return bad(i, `white space in a property name: quote the name, as in /"department name"`)
			default:
				if c < 0x20 || c == 0x7f {
					return bad(i, "control character in a property name")
				}
			}
		}
		if i == start {
			return bad(i, "empty property name")
		}
		segs = append(segs, s[start:i])
	}
	return Path{text: s, segments: segs}, nil
}

// PathOf returns the path that walks names, in order: each name written
// plain where the grammar allows and quoted otherwise (\" and \\ escaped),
// so its String parses back to the same names. A name holding a control
// character or invalid UTF-8 cannot be written, nor can no name at all: a
// *PathError about the text it built. It costs one pass over the names.
func PathOf(names ...string) (Path, error) {
	var b strings.Builder
	for _, name := range names {
		b.WriteByte('/')
		if name != "" && !strings.ContainsAny(name, "/\"\\*?[] \t\n\r\f\v\x7f") {
			b.WriteString(name)
			continue
		}
		b.WriteByte('"')
		for i := 0; i < len(name); i++ {
			if c := name[i]; c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(name[i])
		}
		b.WriteByte('"')
	}
	return ParsePath(b.String())
}

// Lookup finds the value at p in the raw JSON document doc without
// decoding it, and returns it as a RawValue viewing doc. The scanner checks
// the syntax of what it passes over (jsontext.Lenient), skips what it does
// not need and stops at the value: malformed JSON after it goes unnoticed,
// and of a name repeated in one object the first counts (encoding/json
// keeps the last). A missing value, or malformed JSON before it, is a
// *KeyError wrapping ErrNoPartitionKey (with the byte offset); an object or
// array at the path wraps ErrKeyType. It allocates nothing (for containers
// nested up to 64 deep).
func (p Path) Lookup(doc []byte) (RawValue, error) { return p.LookupAt(doc, 0) }

// LookupAt is Lookup for the JSON text of the value at p's first from
// names (0 ≤ from ≤ Len): it walks the remaining names. With from == Len it
// reads the text's one value. Errors name the whole path.
func (p Path) LookupAt(doc []byte, from int) (RawValue, error) {
	if from < 0 || from > len(p.segments) {
		return RawValue{}, &KeyError{Path: p.text, Err: ErrNoPartitionKey, Reason: "LookupAt past the path's end"}
	}
	s := jsontext.NewScanner(doc, jsontext.Lenient)
	segs := p.segments[from:]
	for depth, seg := range segs {
		found, err := s.FindMember(seg, depth)
		if err != nil {
			return RawValue{}, p.malformed(err)
		}
		if !found {
			ke := &KeyError{Path: p.text, Err: ErrNoPartitionKey}
			if from == 0 {
				s.Seek(0)
				if s.Peek() != '{' && s.Pos() < len(doc) {
					ke.Reason = "the document is not a JSON object"
				}
			}
			return RawValue{}, ke
		}
	}
	kind, begin, escaped, err := s.ScalarBounds()
	end := s.Pos()
	switch {
	case err != nil:
		return RawValue{}, p.malformed(err)
	case kind == jsontext.Object || kind == jsontext.Array:
		return RawValue{}, &KeyError{Path: p.text, Err: ErrKeyType, Reason: "the value is an object or array, not a string, number, boolean or null"}
	}
	if len(segs) > 0 {
		// A member's value must end where a member ends.
		switch c := s.Peek(); {
		case s.Pos() >= len(doc):
			return RawValue{}, p.malformed(s.Fail("unexpected end of JSON after the key"))
		case c != ',' && c != '}':
			return RawValue{}, p.malformed(s.Fail("want ',' or '}' after the key"))
		}
	}
	return RawValue{kind: ValueKind(kind), escaped: escaped, text: doc[begin:end:end]}, nil
}

func (p Path) malformed(err error) error {
	return &KeyError{Path: p.text, Err: ErrNoPartitionKey, Reason: "malformed JSON: " + err.Error()}
}
