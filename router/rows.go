package router

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/docshard/docshard/internal/jsontext"
	"github.com/docshard/docshard/query"
)

// Reading the rows of an ORDER BY fan-out. Every row a collection returns
// is {"k": [{"v": key}, ...], "p": payload} (query.Plan), and the merge
// needs only the keys, decoded, and the payload's bytes. A general JSON
// reader walks each row several times over: finding the members, then each
// wrapper's "v", then the keys' values. This one reads a row in one pass
// with the module's scanner (jsontext, lenient: it checks the grammar of all
// it passes, payload included) and decodes scalar keys in place, which
// halves the router's share of an ORDER BY fan-out. It accepts any spacing
// and member order; the payload is passed on as the store wrote it.

// orderedRow reads one ORDER BY row into keys (len n, filled in order)
// and returns its payload, nil when the row has none (an undefined
// result). The row's bytes must not change while keys or the payload are
// in use: string keys without escapes alias them.
func orderedRow(row []byte, keys []any) (payload []byte, err error) {
	s := jsontext.NewScanner(row, jsontext.Lenient)
	if s.Peek() != '{' {
		return nil, fmt.Errorf("an ORDER BY row is an object, got %.40s", row)
	}
	members, _ := s.Object()
	sawKeys := false
	for {
		name, ok, err := members.Next()
		switch {
		case err != nil:
			return nil, rowError(err)
		case !ok:
			if s.SkipSpace() != len(row) {
				return nil, rowError(s.Fail("the end of the row"))
			}
			if !sawKeys {
				return nil, errors.New("an ORDER BY row lacks its sort keys")
			}
			return payload, nil
		case name.Is("k"):
			sawKeys = true
			err = sortKeys(&s, row, keys)
		case name.Is("p"):
			start := s.Pos()
			err = s.Skip(1)
			payload = row[start:s.Pos():s.Pos()]
		default:
			err = s.Skip(1)
		}
		if err != nil {
			return nil, rowError(err)
		}
	}
}

// rowError marks a scanner's error as the row's.
func rowError(err error) error {
	var se *jsontext.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("malformed row: %w", err)
	}
	return err
}

// sortKeys reads [{"v": key}, ...] of row into keys; a wrapper without "v"
// is an undefined key.
func sortKeys(s *jsontext.Scanner, row []byte, keys []any) error {
	elements, err := s.Array()
	if err != nil {
		return err
	}
	n := 0
	for {
		ok, err := elements.Next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		members, err := s.Object()
		if err != nil {
			return errors.New("a sort key is not wrapped in an object")
		}
		var v any = query.Undefined
		for {
			name, ok, err := members.Next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if !name.Is("v") {
				err = s.Skip(3)
			} else {
				v, err = scalar(s, row)
			}
			if err != nil {
				return err
			}
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

// scalar decodes one sort key of row: numbers, strings, booleans and null
// in place (a string without escapes in valid UTF-8 aliases the row),
// anything else through encoding/json.
func scalar(s *jsontext.Scanner, row []byte) (any, error) {
	tok, err := s.Scalar()
	if err != nil {
		return nil, err
	}
	switch tok.Kind {
	case jsontext.String:
		q := tok.Quoted()
		if q.Plain() && len(q.Body) > 0 {
			return unsafe.String(&q.Body[0], len(q.Body)), nil
		}
		return q.Decode(), nil
	case jsontext.Number:
		f, err := strconv.ParseFloat(unsafe.String(&tok.Text[0], len(tok.Text)), 64)
		if err != nil {
			return nil, fmt.Errorf("malformed row: number %q at byte %d", tok.Text, s.Pos()-len(tok.Text))
		}
		return f, nil
	case jsontext.Bool:
		return tok.Text[0] == 't', nil
	case jsontext.Null:
		return nil, nil
	}
	start := s.Pos() // an object or array: Scalar did not move
	if err := s.Skip(3); err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(row[start:s.Pos()], &v); err != nil {
		return nil, err
	}
	return v, nil
}
