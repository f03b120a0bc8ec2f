package partitionkey

// CompositeKey is the key of a resolver whose partitionKey lists several
// paths: the values at those paths, in order. It is placed by the RFC 8785
// JSON text of the array, e.g. ["eu",42]; collections are partitioned by its
// first part (CollectionKey). A plain []any is taken as one too.
// resolver.CompositeKey is this type.
type CompositeKey []any

// Null is the partition-key value of a document whose value at the key path
// is JSON null, in every document form: raw JSON null, a nil value in a map,
// a nil pointer, interface, map or slice in a struct. It differs from a
// missing value (None, or an error wrapping ErrNoPartitionKey where a key is
// required). Its texts are "null"; it marshals to JSON null. resolver.Null
// and store.Null are this value.
var Null = nullKey{}

type nullKey struct{}

// String returns "null".
func (nullKey) String() string { return "null" }

// MarshalJSON writes null.
func (nullKey) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// None is the partition-key value of a document that has no value at the
// key path: Cosmos DB stores such documents under the "undefined" key
// (PartitionKey.None in its SDKs), distinct from Null, and they are read,
// replaced, deleted and queried with None. Its identity text is NoneText;
// it has no placement text. store.None is this value.
var None = noneKey{}

// NoneText is the identity text of None: not JSON, so unlike the identity
// text of every other value.
const NoneText = "undefined"

type noneKey struct{}

// String returns NoneText.
func (noneKey) String() string { return NoneText }
