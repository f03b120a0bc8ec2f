package jsontext

import (
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Mode says what a Scanner checks beyond JSON's grammar.
type Mode uint8

const (
	// Lenient checks the grammar of everything the scanner passes over
	// (escapes, control characters, numbers, literals, brackets, nesting up
	// to MaxDepth) but not that strings are valid UTF-8 (decoding replaces
	// invalid bytes with U+FFFD, as encoding/json does) nor that numbers fit
	// a float64. It is what reading a partition key needs: nothing a decoder
	// would refuse slips through unnoticed before the key, and nothing is
	// checked twice.
	Lenient Mode = iota
	// Strict also refuses invalid UTF-8 in strings and numbers a float64
	// cannot hold: a text it accepts whole is exactly one encoding/json
	// decodes into an any without replacing a byte. The embedded store
	// validates documents so.
	Strict
)

// MaxDepth bounds how deeply objects and arrays nest, counting every
// enclosing container, as encoding/json bounds what it decodes.
const MaxDepth = 10000

// SyntaxError is malformed JSON at a byte offset.
type SyntaxError struct {
	Offset int    // of the problem, from 0
	Msg    string // what is wrong: "want ':' after a member name, found '1'"
}

// Error returns "Msg at byte Offset".
func (e *SyntaxError) Error() string { return e.Msg + " at byte " + strconv.Itoa(e.Offset) }

// Kind is the JSON type of a value.
type Kind uint8

// The kinds of JSON value, in the order partition-key kinds share.
const (
	Invalid Kind = iota
	String
	Number
	Bool
	Null
	Object
	Array
)

// Token is a scalar as the text holds it, viewing the scanned bytes.
type Token struct {
	Kind    Kind   // String, Number, Bool or Null
	Text    []byte // the value's text; a string's with its quotes
	Escaped bool   // a string holding a backslash escape
}

// Quoted views a String token's body (no copy).
func (t Token) Quoted() Quoted {
	return Quoted{Body: t.Text[1 : len(t.Text)-1], Escaped: t.Escaped}
}

// Scanner walks JSON text in place, without building values and without
// recursion: it finds members, reads scalars and skips whatever the caller
// does not need, checking the syntax of all it passes over (see Mode). The
// zero Scanner scans nothing; NewScanner makes one. A Scanner is a few words
// on the stack: scanning allocates only for containers nested more than 64
// deep.
type Scanner struct {
	data []byte
	pos  int
	mode Mode
	stop *[256]bool // the mode's stopLenient or stopStrict
}

// NewScanner returns a Scanner at the start of data.
func NewScanner(data []byte, mode Mode) Scanner {
	stop := &stopLenient
	if mode == Strict {
		stop = &stopStrict
	}
	return Scanner{data: data, mode: mode, stop: stop}
}

// Pos returns the offset the scanner is at.
func (s *Scanner) Pos() int { return s.pos }

// Seek moves the scanner to offset pos (which must be between values, as a
// Pos the scanner reported).
func (s *Scanner) Seek(pos int) { s.pos = pos }

// isSpace marks JSON white space.
var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// SkipSpace moves past white space and returns the offset it stops at.
func (s *Scanner) SkipSpace() int {
	if s.pos < len(s.data) && s.data[s.pos] > ' ' { // the usual case: no space
		return s.pos
	}
	data, pos := s.data, s.pos
	for pos < len(data) && isSpace[data[pos]] {
		pos++
	}
	s.pos = pos
	return pos
}

// Peek moves past white space and returns the byte there, without
// consuming it; 0 at the end of the text (check Pos to tell a NUL byte,
// which is never valid there).
func (s *Scanner) Peek() byte {
	if s.SkipSpace() < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// Fail returns a *SyntaxError at the scanner's offset.
func (s *Scanner) Fail(msg string) error { return &SyntaxError{Offset: s.pos, Msg: msg} }

// failWant reports that want was expected at offset i: "unexpected end of
// JSON, want X" at the end of the text, "want X, found 'c'" elsewhere.
func (s *Scanner) failWant(i int, want string) error {
	s.pos = i
	if i >= len(s.data) {
		return s.Fail("unexpected end of JSON, want " + want)
	}
	return s.Fail("want " + want + ", found " + strconv.QuoteRune(rune(s.data[i])))
}

// stopLenient marks the bytes that end the plain run of a string: the
// closing quote, an escape, or a control character (an error).
// stopStrict marks non-ASCII bytes too, so their UTF-8 is checked.
var stopLenient, stopStrict = func() (l, st [256]bool) {
	for c := 0; c < 256; c++ {
		l[c] = c < 0x20 || c == '"' || c == '\\'
		st[c] = l[c] || c >= utf8.RuneSelf
	}
	return
}()

// fastString returns the offset after the string whose quote is at pos when
// its body is one plain run, or -1 (scanString then reads it). It is small
// enough to be inlined in the scanner's loops.
func fastString(data []byte, pos int, stop *[256]bool) int {
	for pos++; pos < len(data) && !stop[data[pos]]; pos++ {
	}
	if pos < len(data) && data[pos] == '"' {
		return pos + 1
	}
	return -1
}

// scanString reads the string whose quote is at pos, checking its escapes
// (and, Strict, its UTF-8), and moves past it. It reports whether the string
// holds an escape.
func (s *Scanner) scanString() (escaped bool, err error) {
	data, start := s.data, s.pos
	stop := s.stop
	high := false
	for i := start + 1; ; {
		for i < len(data) && !stop[data[i]] {
			i++
		}
		if i >= len(data) {
			s.pos = start
			return false, s.Fail("unterminated string")
		}
		switch c := data[i]; {
		case c == '"':
			if high && !utf8.Valid(data[start+1:i]) {
				s.pos = start
				return false, s.Fail("invalid UTF-8 in a string")
			}
			s.pos = i + 1
			return escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(data) {
				s.pos = start
				return false, s.Fail("unterminated string")
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) || hex4(data[i+2:i+6]) < 0 {
					s.pos = i
					return false, s.Fail(`invalid \u escape in a string`)
				}
				i += 6
			default:
				s.pos = i
				return false, s.Fail("invalid escape " + strconv.Quote(string(data[i:i+2])) + " in a string")
			}
		case c < 0x20:
			s.pos = i
			return false, s.Fail("control character " + strconv.QuoteRune(rune(c)) + " in a string")
		default: // non-ASCII, Strict: checked when the string ends
			high = true
			i++
		}
	}
}

// str reads the string at pos, the fast way when it is one plain run.
func (s *Scanner) str() (escaped bool, err error) {
	if end := fastString(s.data, s.pos, s.stop); end >= 0 {
		s.pos = end
		return false, nil
	}
	return s.scanString()
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits returns the offset after the decimal digits from i.
func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// scanNumber moves past the number at pos, checking its grammar (and,
// Strict, that a float64 holds it).
func (s *Scanner) scanNumber() error {
	data, start := s.data, s.pos
	i := start
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return s.failWant(i, "a digit after '-'")
	}
	check := i-start > 300
	if i < len(data) && data[i] == '.' {
		d := digits(data, i+1)
		if d == i+1 {
			return s.failWant(d, "a digit after the decimal point")
		}
		i = d
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		check = true
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		d := digits(data, i)
		if d == i {
			return s.failWant(d, "a digit in the exponent")
		}
		i = d
	}
	if check && s.mode == Strict {
		// encoding/json refuses numbers a float64 cannot hold.
		if _, err := strconv.ParseFloat(unsafe.String(&data[start], i-start), 64); err != nil {
			return s.Fail("number " + strconv.Quote(string(data[start:min(i, start+40)])) + " is out of range")
		}
	}
	s.pos = i
	return nil
}

// scanLiteral moves past lit (true, false or null) at pos.
func (s *Scanner) scanLiteral(lit string) error {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return s.invalidValue()
	}
	s.pos += len(lit)
	return nil
}

func (s *Scanner) invalidValue() error {
	return s.Fail("invalid value: want a value (a string, number, object, array, true, false or null), found " + strconv.QuoteRune(rune(s.data[s.pos])))
}

// Scalar reads the value after white space when it is a string, number,
// true, false or null, and moves past it. At an object or array it returns
// a Token of Kind Object or Array and does not move. It allocates nothing.
func (s *Scanner) Scalar() (Token, error) {
	kind, begin, escaped, err := s.ScalarBounds()
	if err != nil || kind == Object || kind == Array {
		return Token{Kind: kind}, err
	}
	return Token{Kind: kind, Text: s.data[begin:s.pos:s.pos], Escaped: escaped}, nil
}

// ScalarBounds is Scalar for callers on a hot path: the value's kind, and
// its text as data[begin:Pos()], without building a Token (whose copies
// cost a key lookup a fifth of its time).
func (s *Scanner) ScalarBounds() (kind Kind, begin int, escaped bool, err error) {
	if s.SkipSpace() >= len(s.data) {
		return Invalid, 0, false, s.failWant(s.pos, "a value")
	}
	begin = s.pos
	switch s.data[begin] {
	case '{':
		return Object, begin, false, nil
	case '[':
		return Array, begin, false, nil
	}
	kind, escaped, err = s.scalar()
	return kind, begin, escaped, err
}

// scalar moves past the string, number or literal at pos (which is in the
// text and not white space).
func (s *Scanner) scalar() (kind Kind, escaped bool, err error) {
	switch c := s.data[s.pos]; {
	case c == '"':
		escaped, err = s.str()
		return String, escaped, err
	case c == 't':
		return Bool, false, s.scanLiteral("true")
	case c == 'f':
		return Bool, false, s.scanLiteral("false")
	case c == 'n':
		return Null, false, s.scanLiteral("null")
	case c == '-' || isDigit(c):
		return Number, false, s.scanNumber()
	}
	return Invalid, false, s.invalidValue()
}

// Skip moves past one value (after white space), checking it as the Mode
// says. depth is the number of containers enclosing the value (0 for a
// whole text), so nesting is bounded by MaxDepth however the caller got
// there. It never recurses; it costs one pass over the value.
func (s *Scanner) Skip(depth int) error {
	switch s.Peek() {
	case '{', '[':
		return s.skipContainer(depth)
	case 0:
		if s.pos >= len(s.data) {
			return s.failWant(s.pos, "a value")
		}
	}
	_, _, err := s.scalar()
	return err
}

// containers records, for each open container, whether it is an object:
// 64 levels in a word, more in a slice.
type containers struct {
	n     int
	small uint64
	more  []uint64
}

func (c *containers) push(object bool) {
	word, bit := c.n>>6, uint(c.n&63)
	w := &c.small
	if word > 0 {
		for len(c.more) < word {
			c.more = append(c.more, 0)
		}
		w = &c.more[word-1]
	}
	if object {
		*w |= 1 << bit
	} else {
		*w &^= 1 << bit
	}
	c.n++
}

func (c *containers) top() (object bool) {
	i := c.n - 1
	w := c.small
	if i >= 64 {
		w = c.more[i>>6-1]
	}
	return w&(1<<uint(i&63)) != 0
}

// skipContainer moves past the object or array at pos. It is the scanner's
// hot loop: the offset lives in a local and plain strings are scanned in
// line.
func (s *Scanner) skipContainer(depth int) error {
	data, pos := s.data, s.pos
	stop := s.stop
	var open containers
	wantName := false
	for {
		for pos < len(data) && isSpace[data[pos]] {
			pos++
		}
		if wantName {
			if pos >= len(data) || data[pos] != '"' {
				return s.failWant(pos, "a member name (a quoted property name)")
			}
			if end := fastString(data, pos, stop); end >= 0 {
				pos = end
			} else {
				s.pos = pos
				if _, err := s.scanString(); err != nil {
					return err
				}
				pos = s.pos
			}
			for pos < len(data) && isSpace[data[pos]] {
				pos++
			}
			if pos >= len(data) || data[pos] != ':' {
				return s.failWant(pos, "':' after a member name")
			}
			for pos++; pos < len(data) && isSpace[data[pos]]; pos++ {
			}
			wantName = false
		}
		if pos >= len(data) {
			return s.failWant(pos, "a value")
		}
		s.pos = pos
		switch c := data[pos]; {
		case c == '"':
			if end := fastString(data, pos, stop); end >= 0 {
				pos = end
			} else {
				if _, err := s.scanString(); err != nil {
					return err
				}
				pos = s.pos
			}
		case c == '{' || c == '[':
			if depth+open.n >= MaxDepth {
				return s.Fail("nested too deeply (more than " + strconv.Itoa(MaxDepth) + " levels)")
			}
			for pos++; pos < len(data) && isSpace[data[pos]]; pos++ {
			}
			if pos < len(data) && data[pos] == c+2 { // '}' or ']': empty
				pos++
				break
			}
			open.push(c == '{')
			wantName = c == '{'
			continue
		default:
			if _, _, err := s.scalar(); err != nil {
				return err
			}
			pos = s.pos
		}
		// A value ended: close what it ends, or move to the next element.
	closing:
		for {
			if open.n == 0 {
				s.pos = pos
				return nil
			}
			for pos < len(data) && isSpace[data[pos]] {
				pos++
			}
			object := open.top()
			if pos < len(data) {
				switch c := data[pos]; {
				case c == ',':
					pos++
					wantName = object
					break closing
				case object && c == '}', !object && c == ']':
					pos++
					open.n--
					continue
				}
			}
			if object {
				return s.failWant(pos, "',' or '}' after an object member")
			}
			return s.failWant(pos, "',' or ']' after an array element")
		}
	}
}

// seq walks the separators of an object's members or an array's elements.
type seq struct {
	s     *Scanner
	n     int // items begun
	ended bool
}

// open moves past the opening bracket c (after white space).
func (s *Scanner) open(c byte) (seq, error) {
	if s.Peek() != c {
		return seq{}, s.failWant(s.pos, strconv.QuoteRune(rune(c)))
	}
	s.pos++
	return seq{s: s}, nil
}

// next moves past the ',' before every item but the first (and the white
// space after it), or past closer after the last item: more is false then.
func (q *seq) next(closer byte, item string) (more bool, err error) {
	if q.ended {
		return false, nil
	}
	s := q.s
	switch c := s.Peek(); {
	case c == closer:
		s.pos++
		q.ended = true
		return false, nil
	case q.n > 0 && c != ',':
		return false, s.failWant(s.pos, "',' or "+strconv.QuoteRune(rune(closer))+" after "+item)
	case q.n > 0:
		s.pos++
		s.SkipSpace()
	}
	q.n++
	return true, nil
}

// Members iterates over the members of an object; see Scanner.Object.
type Members struct{ seq }

// Object moves past the '{' that opens an object (after white space) and
// returns an iterator over its members. Anything else is a *SyntaxError.
func (s *Scanner) Object() (Members, error) {
	q, err := s.open('{')
	return Members{q}, err
}

// Next reads the next member's name and the ':' after it, leaving the
// scanner at the member's value (after white space), which the caller must
// read or skip before calling Next again. ok is false after the last member,
// with the scanner past the closing '}'. The name views the text.
func (m *Members) Next() (name Quoted, ok bool, err error) {
	if more, err := m.next('}', "an object member"); !more || err != nil {
		return Quoted{}, false, err
	}
	s := m.s
	start := s.pos
	if start >= len(s.data) || s.data[start] != '"' {
		return Quoted{}, false, s.failWant(start, "a member name (a quoted property name)")
	}
	if name.Escaped, err = s.str(); err != nil {
		return Quoted{}, false, err
	}
	name.Body = s.data[start+1 : s.pos-1 : s.pos-1]
	if s.Peek() != ':' {
		return Quoted{}, false, s.failWant(s.pos, "':' after a member name")
	}
	s.pos++
	s.SkipSpace()
	return name, true, nil
}

// Elements iterates over the elements of an array; see Scanner.Array.
type Elements struct{ seq }

// Array moves past the '[' that opens an array (after white space) and
// returns an iterator over its elements. Anything else is a *SyntaxError.
func (s *Scanner) Array() (Elements, error) {
	q, err := s.open('[')
	return Elements{q}, err
}

// Next moves to the next element (after white space), which the caller
// must read or skip before calling Next again. ok is false after the last
// element, with the scanner past the closing ']'.
func (e *Elements) Next() (ok bool, err error) { return e.next(']', "an array element") }

// Valid checks that data is one JSON value (white space around it
// allowed), as mode says. It allocates nothing for containers nested up to
// 64 deep.
func Valid(data []byte, mode Mode) error {
	s := NewScanner(data, mode)
	if err := s.Skip(0); err != nil {
		return err
	}
	if s.SkipSpace() != len(data) {
		return s.Fail("unexpected " + strconv.QuoteRune(rune(data[s.pos])) + " after the value")
	}
	return nil
}

// FindMember expects an object after white space and moves to the value of
// the first member whose decoded name is name (later ones are not looked
// at). It reports false, with the offset unspecified, when the value is not
// an object or has no such member. depth is the number of containers
// enclosing the object. It checks what it passes over and allocates
// nothing. It is key lookup's hot loop, so it walks the members itself, the
// offset in a local and plain strings scanned in line, rather than through
// Members.
func (s *Scanner) FindMember(name string, depth int) (bool, error) {
	data, stop := s.data, s.stop
	pos := s.SkipSpace()
	if pos >= len(data) {
		return false, s.failWant(pos, "a value")
	}
	if data[pos] != '{' {
		return false, nil
	}
	for pos++; pos < len(data) && isSpace[data[pos]]; pos++ {
	}
	if pos < len(data) && data[pos] == '}' {
		s.pos = pos + 1
		return false, nil
	}
	for {
		if pos >= len(data) || data[pos] != '"' {
			return false, s.failWant(pos, "a member name (a quoted property name)")
		}
		n := Quoted{}
		if end := fastString(data, pos, stop); end >= 0 {
			n.Body, pos = data[pos+1:end-1], end
		} else {
			s.pos = pos
			esc, err := s.scanString()
			if err != nil {
				return false, err
			}
			n.Body, n.Escaped, pos = data[pos+1:s.pos-1], esc, s.pos
		}
		for pos < len(data) && isSpace[data[pos]] {
			pos++
		}
		if pos >= len(data) || data[pos] != ':' {
			return false, s.failWant(pos, "':' after a member name")
		}
		for pos++; pos < len(data) && isSpace[data[pos]]; pos++ {
		}
		s.pos = pos
		if n.Is(name) {
			return true, nil
		}
		if pos >= len(data) {
			return false, s.failWant(pos, "a value")
		}
		switch c := data[pos]; {
		case c == '"':
			if end := fastString(data, pos, stop); end >= 0 {
				pos = end
				break
			}
			if _, err := s.scanString(); err != nil {
				return false, err
			}
			pos = s.pos
		case c == '{' || c == '[':
			if err := s.skipContainer(depth + 1); err != nil {
				return false, err
			}
			pos = s.pos
		default:
			if _, _, err := s.scalar(); err != nil {
				return false, err
			}
			pos = s.pos
		}
		for pos < len(data) && isSpace[data[pos]] {
			pos++
		}
		switch {
		case pos < len(data) && data[pos] == ',':
			for pos++; pos < len(data) && isSpace[data[pos]]; pos++ {
			}
		case pos < len(data) && data[pos] == '}':
			s.pos = pos + 1
			return false, nil
		default:
			return false, s.failWant(pos, "',' or '}' after an object member")
		}
	}
}
