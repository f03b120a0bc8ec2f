package jsontext

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Quoted is a JSON string as the text holds it, viewed in place.
type Quoted struct {
	Body    []byte // between the quotes, escapes as written
	Escaped bool   // Body holds a backslash escape
}

// Plain reports whether the string is its own decoded value (no escape,
// valid UTF-8), so Body can be used as is. It costs a UTF-8 check of Body.
func (q Quoted) Plain() bool { return !q.Escaped && utf8.Valid(q.Body) }

// AppendDecoded appends the decoded string to dst (see AppendUnescaped). It
// does not allocate when dst has room.
func (q Quoted) AppendDecoded(dst []byte) []byte {
	if q.Plain() {
		return append(dst, q.Body...)
	}
	return AppendUnescaped(dst, q.Body)
}

// Decode returns the decoded string, a copy.
func (q Quoted) Decode() string {
	if q.Plain() {
		return string(q.Body)
	}
	return string(AppendUnescaped(make([]byte, 0, len(q.Body)), q.Body))
}

// Is reports whether the string decodes to name, which must be valid UTF-8.
// It does not allocate for strings without escapes, nor for escaped ones
// that decode to at most 128 bytes.
func (q Quoted) Is(name string) bool {
	if !q.Escaped && len(q.Body) >= len(name) {
		// Decoding can only replace invalid UTF-8 bytes with the longer
		// U+FFFD, so a body as long as name decodes to name only if it
		// equals it.
		return string(q.Body) == name
	}
	return q.isDecoded(name)
}

func (q Quoted) isDecoded(name string) bool {
	if !q.Escaped && !strings.Contains(name, "\uFFFD") {
		return false // shorter than name, and nothing to lengthen it
	}
	var buf [128]byte
	return string(AppendUnescaped(buf[:0], q.Body)) == name
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

// AppendUnescaped appends the decoded body of a JSON string (checked by a
// Scanner) to dst, exactly as encoding/json decodes it: escapes resolved,
// \uXXXX surrogate pairs combined, a lone surrogate and every invalid UTF-8
// byte replaced by U+FFFD. It does not allocate when dst has room.
func AppendUnescaped(dst, body []byte) []byte {
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\\' && i+1 < len(body):
			e := body[i+1]
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
				if i+4 <= len(body) {
					r = hex4(body[i : i+4])
					i += 4
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
						r2 = hex4(body[i+2 : i+6])
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
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, body[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}
