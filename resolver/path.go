package resolver

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Path is one parsed partition-key path, such as "/userId", "/a/b" or
// `/"department name"`. The zero Path has no segment.
type Path struct {
	text     string   // as written
	segments []string // unescaped property names
}

// String returns the path as written.
func (p Path) String() string { return p.text }

// Segments returns the property names the path walks, unescaped. It copies
// the list.
func (p Path) Segments() []string { return append([]string(nil), p.segments...) }

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
// Errors are *ConfigError for the field "partitionKey" whose value is the
// path and whose reason gives the byte offset (from 0) of the problem.
// ParsePath costs one pass over s and an allocation per segment.
func ParsePath(s string) (Path, error) {
	bad := func(pos int, reason string) (Path, error) {
		return Path{}, &ConfigError{Field: "partitionKey", Value: s, Reason: fmt.Sprintf("at byte %d: %s", pos, reason)}
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

// hasPrefix reports whether p's segments begin with all of q's.
func (p Path) hasPrefix(q Path) bool {
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
