package memstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit: a document the store accepts
// must decode (query.NewDoc) when a query first reads it.
const maxDepth = 10000

// syntaxError is a JSON error at a byte offset.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at byte %d: %s", e.off, e.msg)
}

// scanner validates JSON text without decoding it. It accepts exactly what
// encoding/json decodes into an `any`, minus invalid UTF-8 (which
// encoding/json would silently replace): strings with valid escapes and no
// control characters, numbers in JSON's grammar that fit a float64,
// nesting up to maxDepth. It never recurses, so hostile input cannot grow
// the goroutine stack.
type scanner struct {
	b     []byte
	stack []byte // closing brackets of the open containers
	buf   [64]byte
}

func (s *scanner) fail(off int, format string, args ...any) error {
	return &syntaxError{off: off, msg: fmt.Sprintf(format, args...)}
}

func (s *scanner) ws(i int) int {
	for i < len(s.b) {
		switch s.b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// what describes the byte at i for error messages.
func (s *scanner) what(i int) string {
	if i >= len(s.b) {
		return "the end of the text"
	}
	return strconv.QuoteRune(rune(s.b[i]))
}

// str scans the string starting at the quote at i and returns the offset
// after its closing quote and whether it holds escapes.
func (s *scanner) str(i int) (end int, escaped bool, err error) {
	start := i
	i++
	high := false
	for {
		for i < len(s.b) && strPlain[s.b[i]] {
			i++
		}
		if i >= len(s.b) {
			return 0, false, s.fail(start, "unterminated string")
		}
		c := s.b[i]
		switch {
		case c == '"':
			if high && !utf8.Valid(s.b[start+1:i]) {
				return 0, false, s.fail(start, "invalid UTF-8 in a string")
			}
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(s.b) {
				return 0, false, s.fail(start, "unterminated string")
			}
			switch s.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s.b) {
					return 0, false, s.fail(i, `truncated \u escape`)
				}
				for _, h := range s.b[i+2 : i+6] {
					if !isHex(h) {
						return 0, false, s.fail(i, `invalid \u escape`)
					}
				}
				i += 6
			default:
				return 0, false, s.fail(i, "invalid escape %s", s.what(i+1))
			}
		case c < 0x20:
			return 0, false, s.fail(i, "control character %#02x in a string", c)
		default: // >= 0x80
			high = true
			i++
		}
	}
}

// strPlain marks the bytes a string holds without a second look.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// num scans the number starting at i.
func (s *scanner) num(i int) (int, error) {
	start := i
	if i < len(s.b) && s.b[i] == '-' {
		i++
	}
	switch {
	case i < len(s.b) && s.b[i] == '0':
		i++
	case i < len(s.b) && '1' <= s.b[i] && s.b[i] <= '9':
		for i < len(s.b) && isDigit(s.b[i]) {
			i++
		}
	default:
		return 0, s.fail(i, "want a value, found %s", s.what(i))
	}
	intDigits := i - start
	check := intDigits > 300
	if i < len(s.b) && s.b[i] == '.' {
		i++
		if i >= len(s.b) || !isDigit(s.b[i]) {
			return 0, s.fail(i, "want a digit after the decimal point, found %s", s.what(i))
		}
		for i < len(s.b) && isDigit(s.b[i]) {
			i++
		}
	}
	if i < len(s.b) && (s.b[i] == 'e' || s.b[i] == 'E') {
		check = true
		i++
		if i < len(s.b) && (s.b[i] == '+' || s.b[i] == '-') {
			i++
		}
		if i >= len(s.b) || !isDigit(s.b[i]) {
			return 0, s.fail(i, "want a digit in the exponent, found %s", s.what(i))
		}
		for i < len(s.b) && isDigit(s.b[i]) {
			i++
		}
	}
	if check {
		// encoding/json refuses numbers a float64 cannot hold.
		if _, err := strconv.ParseFloat(string(s.b[start:i]), 64); err != nil {
			return 0, s.fail(start, "number %.40s is out of range", s.b[start:i])
		}
	}
	return i, nil
}

// value scans the value starting at i (white space skipped) and returns
// the offset after it. depth is the nesting depth of the value's container.
func (s *scanner) value(i, depth int) (int, error) {
	base := len(s.stack)
	for {
		// A value is expected at i.
		i = s.ws(i)
		if i >= len(s.b) {
			return 0, s.fail(i, "want a value, found the end of the text")
		}
		switch c := s.b[i]; c {
		case '{', '[':
			if depth+len(s.stack)-base+1 > maxDepth {
				return 0, s.fail(i, "nested more than %d deep", maxDepth)
			}
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			i = s.ws(i + 1)
			if i < len(s.b) && s.b[i] == closer {
				i++
				break // an empty container is a whole value
			}
			s.stack = append(s.stack, closer)
			if closer == '}' {
				var err error
				if i, err = s.name(i); err != nil {
					return 0, err
				}
			}
			continue
		case '"':
			var err error
			if i, _, err = s.str(i); err != nil {
				return 0, err
			}
		case 't':
			if _, err := s.lit(i, "true"); err != nil {
				return 0, err
			}
			i += 4
		case 'f':
			if _, err := s.lit(i, "false"); err != nil {
				return 0, err
			}
			i += 5
		case 'n':
			if _, err := s.lit(i, "null"); err != nil {
				return 0, err
			}
			i += 4
		default:
			var err error
			if i, err = s.num(i); err != nil {
				return 0, err
			}
		}
		// A value ended at i: close containers until one continues.
		for {
			if len(s.stack) == base {
				return i, nil
			}
			i = s.ws(i)
			top := s.stack[len(s.stack)-1]
			if i < len(s.b) && s.b[i] == top {
				s.stack = s.stack[:len(s.stack)-1]
				i++
				continue
			}
			if i < len(s.b) && s.b[i] == ',' {
				i = s.ws(i + 1)
				if top == '}' {
					var err error
					if i, err = s.name(i); err != nil {
						return 0, err
					}
				}
				break
			}
			return 0, s.fail(i, "want ',' or %q, found %s", top, s.what(i))
		}
	}
}

// name scans an object member's name and its colon, from i (white space
// skipped), and returns the offset after the colon.
func (s *scanner) name(i int) (int, error) {
	if i >= len(s.b) || s.b[i] != '"' {
		return 0, s.fail(i, "want a property name, found %s", s.what(i))
	}
	i, _, err := s.str(i)
	if err != nil {
		return 0, err
	}
	i = s.ws(i)
	if i >= len(s.b) || s.b[i] != ':' {
		return 0, s.fail(i, "want ':' after a property name, found %s", s.what(i))
	}
	return i + 1, nil
}

func (s *scanner) lit(i int, word string) (int, error) {
	if len(s.b)-i < len(word) || string(s.b[i:i+len(word)]) != word {
		return 0, s.fail(i, "want a value, found %s", s.what(i))
	}
	return i + len(word), nil
}

// member is one property of an object: its name's span (quotes included)
// and its value's span.
type member struct {
	nameStart, nameEnd int
	escaped            bool // the name holds escapes
	valStart, valEnd   int
}

// name returns the member's decoded name.
func (m *member) nameString(b []byte) string {
	if !m.escaped {
		return string(b[m.nameStart+1 : m.nameEnd-1])
	}
	return unquote(b[m.nameStart:m.nameEnd])
}

// is reports whether the member's decoded name is want, without
// allocating when the name has no escapes.
func (m *member) is(b []byte, want string) bool {
	if !m.escaped {
		return string(b[m.nameStart+1:m.nameEnd-1]) == want
	}
	return unquote(b[m.nameStart:m.nameEnd]) == want
}

// unquote decodes a valid JSON string exactly as encoding/json does.
func unquote(raw []byte) string {
	var out string
	if err := json.Unmarshal(raw, &out); err != nil {
		return "" // unreachable for scanned strings
	}
	return out
}

// objectIter walks the members of an object, validating every value.
type objectIter struct {
	s     *scanner
	i     int
	depth int
	first bool
	done  bool
}

// members starts walking the object at b[i] ('{' expected) at the given
// depth (1 for a document).
func (s *scanner) members(i, depth int) (objectIter, error) {
	i = s.ws(i)
	if i >= len(s.b) || s.b[i] != '{' {
		return objectIter{}, s.fail(i, "want '{', found %s", s.what(i))
	}
	return objectIter{s: s, i: i + 1, depth: depth, first: true}, nil
}

// next returns the next member; ok is false after the last one, when end
// is the offset after the closing brace.
func (it *objectIter) next() (m member, ok bool, err error) {
	s := it.s
	i := s.ws(it.i)
	if it.done {
		return member{}, false, nil
	}
	if i < len(s.b) && s.b[i] == '}' {
		it.i, it.done = i+1, true
		return member{}, false, nil
	}
	if !it.first {
		if i >= len(s.b) || s.b[i] != ',' {
			return member{}, false, s.fail(i, "want ',' or '}', found %s", s.what(i))
		}
		i = s.ws(i + 1)
	}
	it.first = false
	if i >= len(s.b) || s.b[i] != '"' {
		return member{}, false, s.fail(i, "want a property name, found %s", s.what(i))
	}
	m.nameStart = i
	if m.nameEnd, m.escaped, err = s.str(i); err != nil {
		return member{}, false, err
	}
	i = s.ws(m.nameEnd)
	if i >= len(s.b) || s.b[i] != ':' {
		return member{}, false, s.fail(i, "want ':' after a property name, found %s", s.what(i))
	}
	m.valStart = s.ws(i + 1)
	if m.valEnd, err = s.value(m.valStart, it.depth); err != nil {
		return member{}, false, err
	}
	it.i = m.valEnd
	return m, true, nil
}

// end is the offset after the object's closing brace, once next has
// reported the last member.
func (it *objectIter) end() int { return it.i }
