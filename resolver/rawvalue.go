package resolver

import (
	"strconv"
	"unsafe"
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

// RawValue is a partition-key value read from raw JSON by KeyDef.ExtractRaw
// without allocating: a view of the document's bytes. It is valid only while
// those bytes are not modified. Reading it costs nothing until asked:
// AppendKey and AppendText decode into the caller's buffer, Value builds the
// Go value Extract would return.
type RawValue struct {
	kind  ValueKind
	flags uint8  // strEscaped
	text  []byte // the JSON text as in the document, a string's quotes included
}

// Kind returns the JSON type of the value.
func (v RawValue) Kind() ValueKind { return v.kind }

// JSON returns the value's JSON text as the document has it (a string with
// its quotes and escapes), viewing the document's bytes.
func (v RawValue) JSON() []byte { return v.text }

// body is a string's text between its quotes.
func (v RawValue) body() []byte { return v.text[1 : len(v.text)-1] }

// AppendText appends the value as text: a string decoded (escapes resolved,
// invalid UTF-8 replaced by U+FFFD, as encoding/json decodes it), anything
// else as its JSON text. It does not allocate when dst has room.
func (v RawValue) AppendText(dst []byte) []byte {
	if v.kind != ValueString {
		return append(dst, v.text...)
	}
	if b := v.body(); plainString(b, v.flags) {
		return append(dst, b...)
	}
	return appendUnescaped(dst, v.body())
}

// Float returns a number's value as float64, the precision every JSON
// reader gives it (integers beyond 2^53 round). Any other kind, or a number
// beyond float64's range, is an error wrapping ErrKeyType.
func (v RawValue) Float() (float64, error) {
	if v.kind != ValueNumber {
		return 0, &KeyError{Err: ErrKeyType, Reason: "the value is a " + v.kind.String() + ", not a number"}
	}
	f, err := strconv.ParseFloat(string(v.text), 64)
	if err != nil {
		return 0, &KeyError{Err: ErrKeyType, Reason: "number " + string(v.text) + " is beyond float64's range"}
	}
	return f, nil
}

// Bool returns a boolean's value; ok is false for any other kind.
func (v RawValue) Bool() (value, ok bool) {
	return v.kind == ValueBool && v.text[0] == 't', v.kind == ValueBool
}

// Value returns the Go value Extract gives for this value: a string (a
// copy), a float64, a bool or Null. It allocates the string copy and the
// interface box.
func (v RawValue) Value() (any, error) { return v.value(false) }

// value builds the key; alias lets a string without escapes view the
// document's bytes instead of copying them.
func (v RawValue) value(alias bool) (any, error) {
	switch v.kind {
	case ValueString:
		b := v.body()
		if !plainString(b, v.flags) {
			return string(appendUnescaped(make([]byte, 0, len(b)), b)), nil
		}
		if alias && len(b) > 0 {
			return unsafe.String(&b[0], len(b)), nil
		}
		return string(b), nil
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

// AppendKey appends the canonical text the value is placed by, the text
// AppendKey(dst, v.Value()) gives: a string decoded, a number in its RFC 8785
// form. A boolean or null has none: an error wrapping ErrKeyType. It does
// not allocate when dst has room.
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

// appendCanonical appends the value as one element of a composite key: RFC
// 8785 JSON (a string quoted, a number canonical, true, false, null).
func (v RawValue) appendCanonical(dst []byte) ([]byte, error) {
	switch v.kind {
	case ValueString:
		if plainString(v.body(), v.flags) {
			// No escape and valid UTF-8: the document's text is canonical
			// (JSON forbids raw control characters, quotes and backslashes).
			return append(dst, v.text...), nil
		}
		var buf [128]byte
		dec := v.AppendText(buf[:0])
		return AppendJSONString(dst, unsafe.String(unsafe.SliceData(dec), len(dec))), nil
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

// AppendRawKey appends the canonical text of the key made of vals: for one
// value, its RawValue.AppendKey; for several, the RFC 8785 JSON text of the
// array, as AppendKey writes a CompositeKey. It does not allocate when dst has
// room (and decoded strings fit 128 bytes).
func AppendRawKey(dst []byte, vals []RawValue) ([]byte, error) {
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
		if dst, err = v.appendCanonical(dst); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}
