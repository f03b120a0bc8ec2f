package partitionkey

import (
	"math"

	"github.com/docshard/docshard/internal/jsontext"
)

// Number converts any Go integer or float type, or a json.Number, to the
// float64 a JSON reader would hold: ok is false when v is not numeric. A
// float32 goes through its shortest decimal text, as encoding/json writes
// it, so float32(0.1) is 0.1; integers beyond 2^53 round to the nearest
// float64. A json.Number that does not parse is a *KeyError wrapping
// ErrKeyType. It allocates nothing but that error.
func Number(v any) (f float64, ok bool, err error) {
	f, ok, err = jsontext.GoNumber(v)
	if err != nil {
		return 0, true, &KeyError{Key: v, Err: ErrKeyType, Reason: err.Error()}
	}
	return f, ok, nil
}

// AppendNumber appends the RFC 8785 (ECMAScript Number.prototype.toString)
// text of f to dst: "0", "1", "-1.5", "1e+21", "1e-7"; -0 is "0". NaN and
// the infinities have no JSON form: a *KeyError wrapping ErrKeyType. It does
// not allocate when dst has room.
func AppendNumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, &KeyError{Key: f, Err: ErrKeyType, Reason: "NaN and infinities have no JSON form"}
	}
	return jsontext.AppendNumber(dst, f, jsontext.Canonical), nil
}

// PlacementText returns the text a key is placed by, the bytes a hash ring
// hashes and a lookup's entries are named by: a string as itself; a number
// (any Go integer or float type, json.Number) in its RFC 8785 form ("1",
// "1.5", "1e+21"); a CompositeKey (or []any) as the RFC 8785 JSON text of
// the array, whose parts are identity texts (`["eu",7,true,null]`). A
// boolean, Null, None or any other type alone is an error wrapping
// ErrKeyType; nil one wrapping ErrNoPartitionKey. It allocates the result
// only.
func PlacementText(key any) (string, error) {
	if s, ok := key.(string); ok {
		return s, nil
	}
	var buf [32]byte
	b, err := AppendPlacement(buf[:0], key)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendPlacement appends the placement text of key (see PlacementText) to
// dst. It does not allocate when dst has room.
func AppendPlacement(dst []byte, key any) ([]byte, error) {
	switch k := key.(type) {
	case nil:
		return dst, &KeyError{Err: ErrNoPartitionKey}
	case string:
		return append(dst, k...), nil
	case CompositeKey:
		return appendComposite(dst, k, false)
	case []any:
		return appendComposite(dst, k, false)
	}
	if f, ok, err := Number(key); ok {
		if err != nil {
			return dst, err
		}
		return AppendNumber(dst, f)
	}
	return dst, &KeyError{Key: key, Err: ErrKeyType, Reason: "want a string, a number or a composite key"}
}

// appendComposite appends the JSON array of the parts' identity texts;
// with none, a None part is written {} (AppendCompositeIdentity), else it
// is refused as every type without a JSON text is.
func appendComposite(dst []byte, parts []any, none bool) ([]byte, error) {
	if len(parts) == 0 {
		return dst, &KeyError{Key: parts, Err: ErrKeyType, Reason: "empty composite key"}
	}
	dst = append(dst, '[')
	for i, p := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		if none && p == None {
			dst = append(dst, noneInComposite...)
			continue
		}
		var ok bool
		var err error
		if dst, ok, err = appendScalar(dst, p); err != nil {
			return dst, err
		} else if !ok {
			return dst, &KeyError{Key: p, Err: ErrKeyType, Reason: "a composite key holds strings, numbers, booleans and nulls"}
		}
	}
	return append(dst, ']'), nil
}

// appendScalar appends the RFC 8785 JSON of a scalar: a string quoted, a
// number canonical, a boolean, null for nil and Null. ok is false for any
// other type.
func appendScalar(dst []byte, v any) (out []byte, ok bool, err error) {
	switch x := v.(type) {
	case nil, nullKey:
		return append(dst, "null"...), true, nil
	case bool:
		if x {
			return append(dst, "true"...), true, nil
		}
		return append(dst, "false"...), true, nil
	case string:
		return jsontext.AppendString(dst, x, jsontext.Canonical), true, nil
	}
	if f, ok, err := Number(v); ok {
		if err != nil {
			return dst, true, err
		}
		dst, err = AppendNumber(dst, f)
		return dst, true, err
	}
	return dst, false, nil
}

// IdentityText returns the text a store indexes and compares a key value
// by, equal for equal values and different for different ones: the RFC
// 8785 JSON of the value (a string quoted, so "1" and 1 differ; a number
// canonical, so 42, 42.0 and int64(42) agree; true, false; null for Null
// and nil), and NoneText for None, which no JSON text equals. A string's
// placement text is its identity text without the quotes (for valid UTF-8;
// invalid bytes read as U+FFFD here). A composite key has none here (a
// hierarchical collection indexes it by AppendCompositeIdentity; a
// collection partitioned by one path takes its CollectionKey), nor has any
// other type: errors wrap ErrKeyType. It allocates the result only.
func IdentityText(v any) (string, error) {
	var buf [48]byte
	b, err := AppendIdentity(buf[:0], v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendIdentity appends the identity text of v (see IdentityText) to dst.
// It does not allocate when dst has room.
func AppendIdentity(dst []byte, v any) ([]byte, error) {
	if v == None {
		return append(dst, NoneText...), nil
	}
	out, ok, err := appendScalar(dst, v)
	if err != nil {
		return dst, err
	}
	if !ok {
		return dst, &KeyError{Key: v, Err: ErrKeyType, Reason: "want a string, number, bool or null"}
	}
	return out, nil
}

// CollectionKey returns the part of key that collections are partitioned
// by: the first part of a composite key (nil for an empty one), the key
// itself otherwise. A collection has one partition-key path, the first of a
// composite KeyDef's, so a point operation passes the store this value.
func CollectionKey(key any) any {
	switch k := key.(type) {
	case CompositeKey:
		if len(k) > 0 {
			return CollectionKey(k[0])
		}
		return nil
	case []any:
		if len(k) > 0 {
			return CollectionKey(k[0])
		}
		return nil
	}
	return key
}

// Equal reports whether two keys are the same value: both composite with
// equal parts in order, or both scalars with the same identity text (so 42
// equals 42.0 and int64(42), "42" does not). A part without an identity text
// is an error wrapping ErrKeyType. It allocates nothing for parts whose
// texts fit 64 bytes.
func Equal(a, b any) (bool, error) {
	ca, aComposite := composite(a)
	cb, bComposite := composite(b)
	switch {
	case aComposite != bComposite:
		return false, nil
	case !aComposite:
		return equalScalar(a, b)
	case len(ca) != len(cb):
		return false, nil
	}
	for i := range ca {
		if eq, err := equalScalar(ca[i], cb[i]); err != nil || !eq {
			return false, err
		}
	}
	return true, nil
}

func composite(k any) ([]any, bool) {
	switch x := k.(type) {
	case CompositeKey:
		return x, true
	case []any:
		return x, true
	}
	return nil, false
}

func equalScalar(a, b any) (bool, error) {
	var bufA, bufB [64]byte
	ta, err := AppendIdentity(bufA[:0], a)
	if err != nil {
		return false, err
	}
	tb, err := AppendIdentity(bufB[:0], b)
	if err != nil {
		return false, err
	}
	return string(ta) == string(tb), nil
}
