package resolver

import "github.com/docshard/docshard/partitionkey"

// ValueKind is the JSON type of a RawValue (partitionkey.ValueKind).
type ValueKind = partitionkey.ValueKind

// The kinds of value a partition key can have.
const (
	ValueString = partitionkey.ValueString
	ValueNumber = partitionkey.ValueNumber
	ValueBool   = partitionkey.ValueBool
	ValueNull   = partitionkey.ValueNull
)

// RawValue is a partition-key value read from raw JSON by KeyDef.ExtractRaw
// without allocating: a view of the document's bytes, valid only while they
// are not modified (partitionkey.RawValue). Its AppendKey appends the
// canonical text KeyString gives for its Value.
type RawValue = partitionkey.RawValue

// AppendRawKey appends the canonical text of the key made of vals: for one
// value, its RawValue.AppendKey; for several, the RFC 8785 JSON text of the
// array, as AppendKey writes a CompositeKey. It does not allocate when dst has
// room (and decoded strings fit 128 bytes). It forwards to
// partitionkey.AppendRawPlacement.
func AppendRawKey(dst []byte, vals []RawValue) ([]byte, error) {
	return partitionkey.AppendRawPlacement(dst, vals)
}
