// Package partitionkey is docshard's one model of a partition-key value,
// shared by the resolvers (which place keys) and the stores (which index
// them), so each rule about keys is written once and neither side needs the
// other.
//
// A key is a JSON scalar read at a Path of a document (ParsePath has the
// strict grammar of Cosmos DB paths; Path.Lookup finds the value in raw JSON
// without decoding it, as a RawValue viewing the bytes), Null for JSON null,
// None for a document with no value there, or a CompositeKey of several.
// Go numbers of every type are one number (Number), written in RFC 8785
// form (AppendNumber). Every key has at most two texts:
//
//   - its placement text (PlacementText), what a hash ring hashes and a
//     lookup names entries by: a string as itself, a number in RFC 8785
//     form, a composite key as the RFC 8785 JSON array. Placement is fixed
//     by it, in every process and language, so it never changes;
//   - its identity text (IdentityText), what a store indexes and compares
//     keys by: the RFC 8785 JSON of the scalar, so "1" and 1 differ, 42 and
//     42.0 agree, and None ("undefined") equals no JSON text. A string's
//     placement text is its identity text without the quotes. A
//     hierarchical collection's composite key has a composite identity text
//     (AppendCompositeIdentity), whose prefixes select its prefix keys.
//
// Paths is a collection's key definition: one path, or 2 to 3 of a
// hierarchical (Cosmos DB MultiHash) key.
//
// CollectionKey gives the part of a key collections are partitioned by, and
// Equal compares keys by identity. Errors are *KeyError wrapping
// ErrNoPartitionKey or ErrKeyType, and *PathError; resolver re-exports the
// key errors, Null, CompositeKey, RawValue and Path under its own names.
//
// The package depends on the standard library and internal/jsontext only.
// Reading raw JSON and writing texts allocate nothing when the caller's
// buffer has room; the functions returning strings allocate the result.
package partitionkey
