package store

import "encoding/json"

// MaxPatchOperations is the most operations one patch holds (Cosmos DB's
// limit).
const MaxPatchOperations = 10

// PatchOpKind is a patch operation, by its name in Cosmos DB's REST API.
type PatchOpKind string

// The patch operations of Cosmos DB (JSON Patch's add, replace, remove
// and move, with Cosmos DB's set and incr). Path and From are JSON
// Pointers ("/a/b/0"; "~1" is "/" and "~0" is "~" in a name).
const (
	// PatchAdd sets an object's property (creating it), or inserts into an
	// array at an index (or at its end: "-" or the length).
	PatchAdd PatchOpKind = "add"
	// PatchSet sets an object's property (creating it), or overwrites an
	// array element (the length or "-" appends).
	PatchSet PatchOpKind = "set"
	// PatchReplace overwrites a property or element that must exist.
	PatchReplace PatchOpKind = "replace"
	// PatchRemove removes a property or element that must exist.
	PatchRemove PatchOpKind = "remove"
	// PatchIncrement adds Value (a number) to the number at Path, or sets
	// it when the property is missing; integers stay exact while the sum
	// fits in 64 bits.
	PatchIncrement PatchOpKind = "incr"
	// PatchMove removes the value at From and adds it at Path.
	PatchMove PatchOpKind = "move"
)

// PatchOp is one operation of a patch (Patcher).
type PatchOp struct {
	Op   PatchOpKind `json:"op"`
	Path string      `json:"path"`
	// From is the source of a move.
	From string `json:"from,omitempty"`
	// Value is the JSON text of the value of add, set, replace and incr
	// (a number); PatchValue makes it from a Go value.
	Value json.RawMessage `json:"value,omitempty"`
}

// PatchValue returns the JSON text of v for PatchOp.Value; a value that
// does not encode is an error wrapping ErrBadRequest.
func PatchValue(v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &Error{Kind: ErrBadRequest, Op: "patch", Message: "the value does not encode to JSON", Err: err}
	}
	return b, nil
}

// PatchOptions qualify a patch. A nil *PatchOptions means none.
type PatchOptions struct {
	// PartitionKey is the document's partition-key value, as
	// WriteOptions.PartitionKey.
	PartitionKey any
	// IfMatch makes the patch conditional on the stored document's ETag;
	// empty means unconditional.
	IfMatch string
	// Condition makes the patch conditional on the document: a filter
	// "FROM c WHERE ..." in Cosmos DB SQL, true for the stored document
	// (else ErrPreconditionFailed); empty means none.
	Condition string
	// Epoch stamps the write, as WriteOptions.Epoch does.
	Epoch int64
}
