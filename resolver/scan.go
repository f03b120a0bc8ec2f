package resolver

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner walks raw JSON without building it: it finds the member a path
// names, checking the syntax of everything it passes over, and stops there.
type scanner struct {
	data []byte
	pos  int
}

// maxDepth bounds the nesting the scanner skips over, as encoding/json
// bounds what it decodes.
const maxDepth = 10000

// syntaxError is malformed JSON at a byte offset.
type syntaxError struct {
	pos int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.pos) }

func (s *scanner) fail(msg string) error { return &syntaxError{pos: s.pos, msg: msg} }

// skipSpace moves past white space.
func (s *scanner) skipSpace() {
	for s.pos < len(s.data) && isSpace[s.data[s.pos]] != 0 {
		s.pos++
	}
}

// isSpace marks JSON white space.
var isSpace = [256]uint8{' ': 1, '\t': 1, '\n': 1, '\r': 1}

// needsLook marks the bytes that end the plain run of a string: the closing
// quote, an escape, or a control character (an error).
var needsLook = func() (t [256]uint8) {
	for c := 0; c < 0x20; c++ {
		t[c] = 1
	}
	t['"'], t['\\'] = 1, 1
	return t
}()

// fastString returns the position after the string at pos when it has no
// escape and no control character, or -1 (scanString then reads it). It is
// small enough to be inlined in the scanner's loops.
func fastString(data []byte, pos int) int {
	for pos++; pos < len(data) && needsLook[data[pos]] == 0; pos++ {
	}
	if pos < len(data) && data[pos] == '"' {
		return pos + 1
	}
	return -1
}

// strEscaped is the flag of a scanned string that has a backslash escape.
const strEscaped = 1

// scanString reads the string starting at pos (a '"'), checking its
// escapes, and moves past it. It returns the bounds of its body (between the
// quotes) and whether it has escapes.
func (s *scanner) scanString() (start, end int, flags uint8, err error) {
	data := s.data
	start = s.pos + 1
	for i := start; ; {
		for i < len(data) && needsLook[data[i]] == 0 {
			i++
		}
		if i >= len(data) {
			s.pos = len(data)
			return 0, 0, 0, s.fail("unterminated string")
		}
		switch c := data[i]; c {
		case '"':
			s.pos = i + 1
			return start, i, flags, nil
		case '\\':
			flags |= strEscaped
			if i+1 >= len(data) {
				s.pos = len(data)
				return 0, 0, 0, s.fail("unterminated string")
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) || hex4(data[i+2:i+6]) < 0 {
					s.pos = i
					return 0, 0, 0, s.fail(`invalid \u escape in a string`)
				}
				i += 6
			default:
				s.pos = i
				return 0, 0, 0, s.fail("invalid escape in a string")
			}
		default:
			s.pos = i
			return 0, 0, 0, s.fail("control character in a string")
		}
	}
}

// hex4 decodes four hex digits, or returns -1.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// appendUnescaped appends the decoded body of a JSON string (already
// checked by scanString) to dst, exactly as encoding/json decodes it: escapes
// resolved, \uXXXX surrogate pairs combined, a lone surrogate and every
// invalid UTF-8 byte replaced by U+FFFD.
func appendUnescaped(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\' && i+1 < len(raw):
			e := raw[i+1]
			i += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := rune(utf8.RuneError)
				if i+4 <= len(raw) {
					r = hex4(raw[i : i+4])
					i += 4
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						r2 = hex4(raw[i+2 : i+6])
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				if r < 0 {
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// plainString reports whether a string body with these flags is its own
// decoded value (no escape, valid UTF-8).
func plainString(body []byte, flags uint8) bool {
	return flags&strEscaped == 0 && utf8.Valid(body)
}

// scanNumber moves past a JSON number, checking its syntax.
func (s *scanner) scanNumber() error {
	data, i := s.data, s.pos
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		for i++; i < len(data) && '0' <= data[i] && data[i] <= '9'; i++ {
		}
	default:
		s.pos = i
		return s.fail("want a digit in a number")
	}
	if i < len(data) && data[i] == '.' {
		i++
		d := i
		for ; i < len(data) && '0' <= data[i] && data[i] <= '9'; i++ {
		}
		if i == d {
			s.pos = i
			return s.fail("want a digit after the decimal point")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		d := i
		for ; i < len(data) && '0' <= data[i] && data[i] <= '9'; i++ {
		}
		if i == d {
			s.pos = i
			return s.fail("want a digit in the exponent")
		}
	}
	s.pos = i
	return nil
}

// scanLiteral moves past true, false or null.
func (s *scanner) scanLiteral(lit string) error {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return s.fail("invalid value (want a string, number, object, array, true, false or null)")
	}
	s.pos += len(lit)
	return nil
}

// containers records, for each open container, whether it is an object.
type containers struct {
	n     int
	small uint64
	more  []uint64 // beyond 64 levels
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

// memberHead reads a member name and its ':'.
func (s *scanner) memberHead() (start, end int, flags uint8, err error) {
	s.skipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return 0, 0, 0, s.fail("want a member name (a string)")
	}
	if start, end, flags, err = s.scanString(); err != nil {
		return
	}
	s.skipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != ':' {
		return 0, 0, 0, s.fail("want ':' after a member name")
	}
	s.pos++
	return
}

// skipValue moves past one JSON value, checking its syntax throughout.
func (s *scanner) skipValue() error {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return s.fail("unexpected end of JSON, want a value")
	}
	if c := s.data[s.pos]; c == '{' || c == '[' {
		return s.skipContainer()
	}
	return s.skipScalar()
}

// skipScalar moves past a string, number, true, false or null at pos.
func (s *scanner) skipScalar() error {
	switch c := s.data[s.pos]; c {
	case '"':
		_, _, _, err := s.scanString()
		return err
	case 't':
		return s.scanLiteral("true")
	case 'f':
		return s.scanLiteral("false")
	case 'n':
		return s.scanLiteral("null")
	default:
		if c != '-' && (c < '0' || c > '9') {
			return s.fail("invalid value (want a string, number, object, array, true, false or null)")
		}
		return s.scanNumber()
	}
}

// skipContainer moves past the object or array at pos, without recursion.
// It is the scanner's hot loop: the position lives in a local and strings
// without escapes are scanned in line.
func (s *scanner) skipContainer() error {
	data, pos := s.data, s.pos
	var open containers
	wantName := false
	for {
		for pos < len(data) && isSpace[data[pos]] != 0 {
			pos++
		}
		if wantName {
			if pos >= len(data) || data[pos] != '"' {
				s.pos = pos
				return s.fail("want a member name (a string)")
			}
			if end := fastString(data, pos); end >= 0 {
				pos = end
			} else {
				s.pos = pos
				if _, _, _, err := s.scanString(); err != nil {
					return err
				}
				pos = s.pos
			}
			for pos < len(data) && isSpace[data[pos]] != 0 {
				pos++
			}
			if pos >= len(data) || data[pos] != ':' {
				s.pos = pos
				return s.fail("want ':' after a member name")
			}
			pos++
			for pos < len(data) && isSpace[data[pos]] != 0 {
				pos++
			}
			wantName = false
		}
		if pos >= len(data) {
			s.pos = pos
			return s.fail("unexpected end of JSON, want a value")
		}
		s.pos = pos
		switch c := data[pos]; {
		case c == '"':
			if end := fastString(data, pos); end >= 0 {
				pos = end
			} else {
				if _, _, _, err := s.scanString(); err != nil {
					return err
				}
				pos = s.pos
			}
		case c == '{' || c == '[':
			pos++
			for pos < len(data) && isSpace[data[pos]] != 0 {
				pos++
			}
			if pos < len(data) && data[pos] == c+2 { // '}' or ']': empty
				pos++
				break
			}
			if open.n >= maxDepth {
				return s.fail("JSON nested too deeply")
			}
			open.push(c == '{')
			wantName = c == '{'
			continue
		default:
			if err := s.skipScalar(); err != nil {
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
			for pos < len(data) && isSpace[data[pos]] != 0 {
				pos++
			}
			s.pos = pos
			if pos >= len(data) {
				return s.fail("unexpected end of JSON")
			}
			object := open.top()
			switch c := data[pos]; {
			case c == ',':
				pos++
				wantName = object
				break closing
			case object && c == '}', !object && c == ']':
				pos++
				open.n--
			case object:
				return s.fail("want ',' or '}' after an object member")
			default:
				return s.fail("want ',' or ']' after an array element")
			}
		}
	}
}

// findMember expects an object at pos and moves to the value of the member
// called name (the first one, should the name repeat). It reports false,
// with pos unspecified, when the value at pos is not an object or has no
// such member.
func (s *scanner) findMember(name string) (bool, error) {
	data, pos := s.data, s.pos
	for pos < len(data) && isSpace[data[pos]] != 0 {
		pos++
	}
	s.pos = pos
	if pos >= len(data) {
		return false, s.fail("unexpected end of JSON")
	}
	if data[pos] != '{' {
		return false, nil
	}
	for pos++; pos < len(data) && isSpace[data[pos]] != 0; pos++ {
	}
	if pos < len(data) && data[pos] == '}' {
		return false, nil
	}
	for {
		s.pos = pos
		if pos >= len(data) || data[pos] != '"' {
			return false, s.fail("want a member name (a string)")
		}
		start, end, flags := pos+1, 0, uint8(0)
		if e := fastString(data, pos); e >= 0 {
			end, pos = e-1, e
		} else {
			var err error
			if start, end, flags, err = s.scanString(); err != nil {
				return false, err
			}
			pos = s.pos
		}
		for pos < len(data) && isSpace[data[pos]] != 0 {
			pos++
		}
		s.pos = pos
		if pos >= len(data) || data[pos] != ':' {
			return false, s.fail("want ':' after a member name")
		}
		for pos++; pos < len(data) && isSpace[data[pos]] != 0; pos++ {
		}
		s.pos = pos
		if nameEquals(data[start:end], flags, name) {
			return true, nil
		}
		if pos >= len(data) {
			return false, s.fail("unexpected end of JSON, want a value")
		}
		switch c := data[pos]; {
		case c == '"':
			if e := fastString(data, pos); e >= 0 {
				pos = e
				break
			}
			if _, _, _, err := s.scanString(); err != nil {
				return false, err
			}
			pos = s.pos
		case c == '{' || c == '[':
			if err := s.skipContainer(); err != nil {
				return false, err
			}
			pos = s.pos
		default:
			if err := s.skipScalar(); err != nil {
				return false, err
			}
			pos = s.pos
		}
		for pos < len(data) && isSpace[data[pos]] != 0 {
			pos++
		}
		s.pos = pos
		if pos >= len(data) {
			return false, s.fail("unexpected end of JSON")
		}
		switch data[pos] {
		case ',':
			for pos++; pos < len(data) && isSpace[data[pos]] != 0; pos++ {
			}
		case '}':
			return false, nil
		default:
			return false, s.fail("want ',' or '}' after an object member")
		}
	}
}

// nameEquals reports whether a member name's body decodes to name.
func nameEquals(body []byte, flags uint8, name string) bool {
	if flags&strEscaped == 0 {
		// Decoding can only replace invalid UTF-8 bytes with the longer
		// U+FFFD, so a body as long as name decodes to name only if it
		// equals it (name is valid UTF-8).
		if len(body) >= len(name) || !strings.Contains(name, "\uFFFD") {
			return string(body) == name
		}
	}
	var buf [128]byte
	return string(appendUnescaped(buf[:0], body)) == name
}

// scalar reads the value at pos as a key, then checks that what follows is
// ',' or '}' when the value is a member (inMember); a top-level value is
// read as is.
func (s *scanner) scalar(inMember bool) (RawValue, error) {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return RawValue{}, s.fail("unexpected end of JSON")
	}
	begin := s.pos
	var v RawValue
	switch c := s.data[s.pos]; c {
	case '"':
		_, _, flags, err := s.scanString()
		if err != nil {
			return RawValue{}, err
		}
		v = RawValue{kind: ValueString, flags: flags}
	case '{', '[':
		return RawValue{}, errObjectKey
	case 't':
		if err := s.scanLiteral("true"); err != nil {
			return RawValue{}, err
		}
		v.kind = ValueBool
	case 'f':
		if err := s.scanLiteral("false"); err != nil {
			return RawValue{}, err
		}
		v.kind = ValueBool
	case 'n':
		if err := s.scanLiteral("null"); err != nil {
			return RawValue{}, err
		}
		v.kind = ValueNull
	default:
		if c != '-' && (c < '0' || c > '9') {
			return RawValue{}, s.fail("invalid value (want a string, number, object, array, true, false or null)")
		}
		if err := s.scanNumber(); err != nil {
			return RawValue{}, err
		}
		v.kind = ValueNumber
	}
	v.text = s.data[begin:s.pos:s.pos]
	if inMember {
		s.skipSpace()
		if s.pos >= len(s.data) {
			return RawValue{}, s.fail("unexpected end of JSON after the key")
		}
		if c := s.data[s.pos]; c != ',' && c != '}' {
			return RawValue{}, s.fail("want ',' or '}' after the key")
		}
	}
	return v, nil
}

// errObjectKey marks an object or array where a key was expected.
var errObjectKey = errors.New("the value is an object or array, not a string, number, boolean or null")

// find walks segs from pos and reads the scalar there.
func (s *scanner) find(segs []string) (RawValue, bool, error) {
	for _, seg := range segs {
		found, err := s.findMember(seg)
		if err != nil || !found {
			return RawValue{}, false, err
		}
	}
	v, err := s.scalar(len(segs) > 0)
	return v, true, err
}
