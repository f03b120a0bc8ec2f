package router

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/docshard/docshard/query"
)

// Reading the rows of an ORDER BY fan-out. Every row a collection returns
// is {"k": [{"v": key}, ...], "p": payload} (query.Plan), and the merge
// needs only the keys, decoded, and the payload's bytes. A general JSON
// reader (gjson here before) walks each row several times over: finding
// the members, then each wrapper's "v", then the keys' values. This one
// reads a row in one pass and decodes scalar keys in place, which halves
// the router's share of an ORDER BY fan-out. It accepts any spacing and
// member order and checks the brackets and strings it passes; the payload
// is passed on as the store wrote it, as before.

// orderedRow reads one ORDER BY row into keys (len n, filled in order)
// and returns its payload, nil when the row has none (an undefined
// result). The row's bytes must not change while keys or the payload are
// in use: string keys without escapes alias them.
func orderedRow(row []byte, keys []any) (payload []byte, err error) {
	r := rowScanner{b: row}
	if !r.at('{') {
		return nil, fmt.Errorf("an ORDER BY row is an object, got %.40s", row)
	}
	sawKeys := false
	err = r.object(func(name string) error {
		switch name {
		case "k":
			sawKeys = true
			return r.sortKeys(keys)
		case "p":
			start := r.space()
			if err := r.skip(); err != nil {
				return err
			}
			payload = row[start:r.i:r.i]
			return nil
		}
		return r.skip()
	})
	switch {
	case err != nil:
		return nil, err
	case r.space() != len(row):
		return nil, r.fail("the end of the row")
	case !sawKeys:
		return nil, errors.New("an ORDER BY row lacks its sort keys")
	}
	return payload, nil
}

// rowScanner walks a row's bytes.
type rowScanner struct {
	b []byte
	i int
}

func (r *rowScanner) fail(want string) error {
	if r.i >= len(r.b) {
		return fmt.Errorf("malformed row: want %s, found the end", want)
	}
	return fmt.Errorf("malformed row: want %s at byte %d, found %q", want, r.i, r.b[r.i])
}

// space skips white space and returns the offset it stops at.
func (r *rowScanner) space() int {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return r.i
		}
	}
	return r.i
}

// at reports whether c comes next, after white space.
func (r *rowScanner) at(c byte) bool { return r.space() < len(r.b) && r.b[r.i] == c }

// expect consumes c, after white space, if it comes next.
func (r *rowScanner) expect(c byte) bool {
	if r.at(c) {
		r.i++
		return true
	}
	return false
}

// object reads the object that comes next, handing each member's name to
// member, which reads its value.
func (r *rowScanner) object(member func(name string) error) error {
	if !r.expect('{') {
		return r.fail("'{'")
	}
	for first := true; !r.expect('}'); first = false {
		if !first && !r.expect(',') {
			return r.fail("',' or '}'")
		}
		name, err := r.name()
		if err != nil {
			return err
		}
		if err := member(name); err != nil {
			return err
		}
	}
	return nil
}

// str reads the string whose quote is at r.i: its text, aliasing the row
// when it holds no escapes.
func (r *rowScanner) str() (string, error) {
	start := r.i
	escaped, err := r.skipString()
	if err != nil {
		return "", err
	}
	if !escaped {
		return unsafe.String(&r.b[start+1], r.i-start-2), nil
	}
	var s string
	if err := json.Unmarshal(r.b[start:r.i], &s); err != nil {
		return "", fmt.Errorf("malformed row: string at byte %d: %w", start, err)
	}
	return s, nil
}

// name reads a member's name and the colon after it.
func (r *rowScanner) name() (string, error) {
	if r.space() >= len(r.b) || r.b[r.i] != '"' {
		return "", r.fail("a property name")
	}
	s, err := r.str()
	if err != nil {
		return "", err
	}
	if !r.expect(':') {
		return "", r.fail("':'")
	}
	return s, nil
}

// skip passes over one value, checking that brackets match and strings
// end. It never recurses.
func (r *rowScanner) skip() error {
	var stack []byte // open brackets, beyond the first few
	var small [16]byte
	stack = small[:0]
	for {
		if r.space() >= len(r.b) {
			return r.fail("a value")
		}
		switch c := r.b[r.i]; c {
		case '"':
			if _, err := r.skipString(); err != nil {
				return err
			}
		case '{', '[':
			stack = append(stack, c+2) // '}' and ']' follow their openers by 2
			r.i++
			continue
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return r.fail("a value")
			}
			stack = stack[:len(stack)-1]
			r.i++
		case ',', ':':
			if len(stack) == 0 {
				return r.fail("a value")
			}
			r.i++
			continue
		default:
			if !r.word() {
				return r.fail("a value")
			}
		}
		if len(stack) == 0 {
			return nil
		}
	}
}

// skipString passes over a string without decoding it.
func (r *rowScanner) skipString() (escaped bool, err error) {
	start := r.i
	for r.i++; r.i < len(r.b); r.i++ {
		switch c := r.b[r.i]; {
		case c == '\\':
			escaped = true
			r.i++
		case c == '"':
			r.i++
			return escaped, nil
		case c < 0x20:
			return false, fmt.Errorf("malformed row: control character in a string at byte %d", r.i)
		}
	}
	return false, fmt.Errorf("malformed row: unterminated string at byte %d", start)
}

// word passes over a number or a literal (true, false, null).
func (r *rowScanner) word() bool {
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E' {
			r.i++
			continue
		}
		break
	}
	return r.i > start
}

// sortKeys reads [{"v": key}, ...] into keys; a wrapper without "v" is an
// undefined key.
func (r *rowScanner) sortKeys(keys []any) error {
	if !r.expect('[') {
		return r.fail("the sort keys' '['")
	}
	n := 0
	for first := true; ; first = false {
		if r.expect(']') {
			break
		}
		if !first && !r.expect(',') {
			return r.fail("',' or ']'")
		}
		if !r.at('{') {
			return errors.New("a sort key is not wrapped in an object")
		}
		var v any = query.Undefined
		err := r.object(func(name string) error {
			if name != "v" {
				return r.skip()
			}
			var err error
			v, err = r.scalar()
			return err
		})
		if err != nil {
			return err
		}
		if n < len(keys) {
			keys[n] = v
		}
		n++
	}
	if n != len(keys) {
		return fmt.Errorf("an ORDER BY row has %d sort keys, the query %d", n, len(keys))
	}
	return nil
}

// scalar decodes one value: numbers, strings, booleans and null in place,
// anything else through encoding/json.
func (r *rowScanner) scalar() (any, error) {
	start := r.space()
	if start >= len(r.b) {
		return nil, r.fail("a value")
	}
	switch c := r.b[start]; {
	case c == '"':
		return r.str()
	case c == '-' || c >= '0' && c <= '9':
		r.word()
		f, err := strconv.ParseFloat(unsafe.String(&r.b[start], r.i-start), 64)
		if err != nil || !jsonNumber(r.b[start:r.i]) {
			return nil, fmt.Errorf("malformed row: number %q at byte %d", r.b[start:r.i], start)
		}
		return f, nil
	case c == 't' || c == 'f' || c == 'n':
		r.word()
		switch string(r.b[start:r.i]) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "null":
			return nil, nil
		}
		return nil, fmt.Errorf("malformed row: %q at byte %d", r.b[start:r.i], start)
	}
	if err := r.skip(); err != nil {
		return nil, err
	}
	return decodeJSON(r.b[start:r.i])
}

// jsonNumber reports whether b, which strconv.ParseFloat accepted, is in
// JSON's grammar too (no '+', leading zeros, bare '.', or hexadecimal).
func jsonNumber(b []byte) bool {
	i := 0
	if b[i] == '-' {
		i++
	}
	switch {
	case i == len(b):
		return false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		d := digits(b, i+1)
		if d == i+1 {
			return false
		}
		i = d
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := digits(b, i)
		if d == i {
			return false
		}
		i = d
	}
	return i == len(b)
}

// digits returns the offset after the decimal digits starting at i.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
