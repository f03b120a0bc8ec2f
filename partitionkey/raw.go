package partitionkey

import (
	"strconv"
	"unsafe"

	"github.com/docshard/docshard/internal/jsontext"
)

// ValueKind is the JSON type of a RawValue.
type ValueKind uint8

// The kinds of value a partition key can have.
const (
	ValueString ValueKind = iota + 1
	ValueNumber
	ValueBool
	ValueNull
)

// String returns "string", "number", "bool" or "null".
func (k ValueKind) String() string {
	switch k {
	case ValueString:
		return "string"
	case ValueNumber:
		return "number"
	case ValueBool:
		return "bool"
	case ValueNull:
		return "null"
	}
	return "invalid"
}

// RawValue is a partition-key value read from raw JSON (Path.Lookup,
// RawValueOf) without allocating: a view of the document's bytes, valid only
// while those bytes are not modified. Reading it costs nothing until asked:
// the Append methods decode into the caller's buffer, Value builds the Go
// value. The zero RawValue is no value (an error wrapping
// ErrNoPartitionKey wherever it is read). resolver.RawValue is this type.
type RawValue struct {
	kind    ValueKind
	escaped bool   // a string with a backslash escape
	text    []byte // the JSON text as in the document, a string's quotes included
}

// rawValue views a scalar Token: jsontext numbers its scalar kinds as
// ValueKind does (TestRawValue checks it).
func rawValue(t jsontext.Token) RawValue {
	return RawValue{kind: ValueKind(t.Kind), escaped: t.Escaped, text: t.Text}
}

// RawValueOf views text, the JSON text of one string, number, true, false
// or null (white space around it allowed), as a RawValue. Anything else is a
// *KeyError wrapping ErrKeyType. It checks the syntax as Lookup does and
// allocates nothing.
func RawValueOf(text []byte) (RawValue, error) {
	s := jsontext.NewScanner(text, jsontext.Lenient)
	tok, err := s.Scalar()
	switch {
	case err == nil && (tok.Kind == jsontext.Object || tok.Kind == jsontext.Array):
		err = s.Fail("an object or array, not a string, number, boolean or null")
	case err == nil && s.SkipSpace() != len(text):
		err = s.Fail("data after the value")
	}
	if err != nil {
		return RawValue{}, &KeyError{Err: ErrKeyType, Reason: "not one JSON scalar: " + err.Error()}
	}
	return rawValue(tok), nil
}

// Kind returns the JSON type of the value.
func (v RawValue) Kind() ValueKind { return v.kind }

// JSON returns the value's JSON text as the document has it (a string with
// its quotes and escapes), viewing the document's bytes.
func (v RawValue) JSON() []byte { return v.text }

// quoted is a string value as the scanner saw it.
func (v RawValue) quoted() jsontext.Quoted {
	return jsontext.Quoted{Body: v.text[1 : len(v.text)-1], Escaped: v.escaped}
}

// AppendText appends the value as text: a string decoded (escapes resolved,
// invalid UTF-8 replaced by U+FFFD, as encoding/json decodes it), anything
// else as its JSON text. It does not allocate when dst has room.
func (v RawValue) AppendText(dst []byte) []byte {
	if v.kind != ValueString {
		return append(dst, v.text...)
	}
	return v.quoted().AppendDecoded(dst)
}

// Float returns a number's value as float64, the precision every JSON
// reader gives it (integers beyond 2^53 round). Any other kind, or a number
// beyond float64's range, is an error wrapping ErrKeyType.
func (v RawValue) Float() (float64, error) {
	if v.kind != ValueNumber {
		return 0, &KeyError{Err: ErrKeyType, Reason: "the value is a " + v.kind.String() + ", not a number"}
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(v.text), len(v.text)), 64)
	if err != nil {
		return 0, &KeyError{Err: ErrKeyType, Reason: "number " + string(v.text) + " is beyond float64's range"}
	}
	return f, nil
}

// Bool returns a boolean's value; ok is false for any other kind.
func (v RawValue) Bool() (value, ok bool) {
	return v.kind == ValueBool && v.text[0] == 't', v.kind == ValueBool
}

// Value returns the Go value the key is: a string (a copy), a float64, a
// bool or Null. It allocates the string copy and the interface box.
func (v RawValue) Value() (any, error) { return v.value(false) }

// BorrowedValue is Value without the copy: a string without escapes views
// the document's bytes, so it is valid only while they are not modified.
// It allocates the interface box.
func (v RawValue) BorrowedValue() (any, error) { return v.value(true) }

func (v RawValue) value(borrow bool) (any, error) {
	switch v.kind {
	case ValueString:
		q := v.quoted()
		if borrow && q.Plain() && len(q.Body) > 0 {
			return unsafe.String(&q.Body[0], len(q.Body)), nil
		}
		return q.Decode(), nil
	case ValueNumber:
		f, err := v.Float()
		if err != nil {
			return nil, err
		}
		return f, nil
	case ValueBool:
		return v.text[0] == 't', nil
	case ValueNull:
		return Null, nil
	}
	return nil, &KeyError{Err: ErrNoPartitionKey, Reason: "empty RawValue"}
}

// AppendKey appends the value's placement text, the text AppendPlacement
// gives for Value(): a string decoded, a number in its RFC 8785 form. A
// boolean or null has none: an error wrapping ErrKeyType. It does not
// allocate when dst has room.
func (v RawValue) AppendKey(dst []byte) ([]byte, error) {
	switch v.kind {
	case ValueString:
		return v.AppendText(dst), nil
	case ValueNumber:
		f, err := v.Float()
		if err != nil {
			return dst, err
		}
		return AppendNumber(dst, f)
	}
	k, _ := v.value(false)
	return dst, &KeyError{Key: k, Err: ErrKeyType, Reason: "want a string, a number or a composite key"}
}

// AppendIdentity appends the value's identity text, the text
// AppendIdentity gives for Value(): its RFC 8785 JSON (a string quoted, a
// number canonical, true, false, null). A string without escapes in valid
// UTF-8 is its own text; others are decoded and written again, without
// allocating for strings that decode to 128 bytes or fewer.
func (v RawValue) AppendIdentity(dst []byte) ([]byte, error) {
	switch v.kind {
	case ValueString:
		q := v.quoted()
		if q.Plain() {
			// JSON forbids raw control characters, quotes and
			// backslashes: the document's text is canonical.
			return append(dst, v.text...), nil
		}
		var buf [128]byte
		dec := q.AppendDecoded(buf[:0])
		return jsontext.AppendString(dst, unsafe.String(unsafe.SliceData(dec), len(dec)), jsontext.Canonical), nil
	case ValueNumber:
		f, err := v.Float()
		if err != nil {
			return dst, err
		}
		return AppendNumber(dst, f)
	case ValueBool, ValueNull:
		return append(dst, v.text...), nil
	}
	return dst, &KeyError{Err: ErrNoPartitionKey, Reason: "empty RawValue"}
}

// AppendRawPlacement appends the placement text of the key made of vals:
// for one value, its AppendKey; for several, the RFC 8785 JSON text of the
// array, as AppendPlacement writes a CompositeKey. It does not allocate when
// dst has room (and decoded strings fit 128 bytes).
func AppendRawPlacement(dst []byte, vals []RawValue) ([]byte, error) {
	switch len(vals) {
	case 0:
		return dst, &KeyError{Err: ErrNoPartitionKey}
	case 1:
		return vals[0].AppendKey(dst)
	}
	dst = append(dst, '[')
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = v.AppendIdentity(dst); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}
