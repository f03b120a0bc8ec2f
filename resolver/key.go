package resolver

import (
	"github.com/docshard/docshard/internal/jsontext"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/partitionkey"
	"strings"
)

// The partition-key value model lives in package partitionkey, which the
// stores share; these names keep resolver's API as it was.

// CompositeKey is the key of a resolver whose partitionKey lists several
// paths: the values at those paths, in order. It is placed by the canonical
// JSON text of the array (RFC 8785), e.g. ["eu",42]. It is
// partitionkey.CompositeKey.
type CompositeKey = partitionkey.CompositeKey

// Null is the partition key of a document whose value at the key path is
// JSON null, in every document form (see partitionkey.Null, which it is). It
// differs from a missing key, which is an error wrapping ErrNoPartitionKey.
// Cosmos DB accepts null keys; the hash ring and lookup do not (ErrKeyType);
// in a composite key it is written null.
var Null = partitionkey.Null

// KeyString returns the canonical text a key is placed by: a string as
// itself; a number (any Go integer or float type, json.Number) in its RFC
// 8785 form ("1", "1.5", "1e+21"); a CompositeKey (or []any) as the RFC 8785
// JSON text of the array. Any other type is an error wrapping ErrKeyType; nil
// is an error wrapping ErrNoPartitionKey. It allocates the result only. It
// forwards to partitionkey.PlacementText.
func KeyString(key any) (string, error) { return partitionkey.PlacementText(key) }

// AppendKey appends the canonical text of key (see KeyString) to dst. It
// does not allocate when dst has room. It forwards to
// partitionkey.AppendPlacement.
func AppendKey(dst []byte, key any) ([]byte, error) { return partitionkey.AppendPlacement(dst, key) }

// Number converts any Go numeric type, or a json.Number, to float64. ok is
// false when key is not numeric. A float32 is converted through its shortest
// decimal text, as encoding/json writes it, so 0.1 stays 0.1. Integers beyond
// 2^53 are rounded to the nearest float64, as every JSON reader does. It
// forwards to partitionkey.Number.
func Number(key any) (f float64, ok bool, err error) { return partitionkey.Number(key) }

// AppendNumber appends the RFC 8785 (ECMAScript Number.prototype.toString)
// text of f to dst: "0", "1", "-1.5", "1e+21", "1e-7". NaN and infinities
// have no JSON form and are an error wrapping ErrKeyType. It forwards to
// partitionkey.AppendNumber.
func AppendNumber(dst []byte, f float64) ([]byte, error) { return partitionkey.AppendNumber(dst, f) }

// appendJSONString appends s as an RFC 8785 JSON string: '"' and '\\'
// escaped, control characters as \b \t \n \f \r or \u00xx, everything else
// (non-ASCII included) as UTF-8. Invalid UTF-8 bytes become U+FFFD. It is
// the module's one string writer under its Canonical policy.
func appendJSONString(dst []byte, s string) []byte {
	return jsontext.AppendString(dst, s, jsontext.Canonical)
}

// ValidateLink checks that s is a collection link "dbs/{db}/colls/{coll}"
// (a leading or trailing slash allowed; the link is kept verbatim). The error
// is a *ConfigError.
func ValidateLink(s string) error {
	if _, err := link.ParseCollection(s); err != nil {
		return &ConfigError{Value: s, Reason: "not a collection link dbs/{db}/colls/{coll}: " + strings.TrimPrefix(err.Error(), link.ErrInvalid.Error()+" ")}
	}
	return nil
}
