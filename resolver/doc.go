// Package resolver holds the contract every docshard partition resolver
// implements, and what they share: partition-key extraction from documents
// in every form (Cosmos DB JSON paths, composite keys, zero-copy scanning of
// raw JSON), targets that are either a collection link or a nested
// resolver, and the JSON codec for resolver trees. The partition-key value
// model itself (paths, Null, CompositeKey, RawValue, the key errors, the
// canonical text a key is placed by) is package partitionkey, which the
// stores share; resolver keeps its names for it as aliases and forwarders.
//
// # Partition keys
//
// A KeyDef is a parsed partitionKey setting: a Cosmos DB path such as
// "/userId", "/address/city" or `/"department name"` (see ParsePath for the
// grammar), or several paths, which make a CompositeKey. KeyDef.Extract reads
// the key of a document in any of its forms and gives the same answer for
// each, the value the document's JSON holds at the path: raw JSON ([]byte,
// json.RawMessage, string) is scanned without being unmarshalled and only as
// far as the key; maps are walked; structs are read as encoding/json would
// write them (tags, embedding, omitempty, marshalers). Keys are strings,
// float64 numbers, bools or Null (JSON null); a missing key is an error
// wrapping ErrNoPartitionKey and an object or array one wrapping ErrKeyType.
//
// Extract from raw JSON allocates the key's copy and its interface box.
// Callers that only hash or compare the key use the allocation-free layer
// beneath it: KeyDef.ExtractRaw returns RawValues viewing the document, and
// KeyDef.AppendKey appends the key's canonical text (KeyString's text: a
// string as is, a number in RFC 8785 form, a composite key as an RFC 8785
// JSON array) to a caller's buffer.
//
// # Resolver JSON
//
// The codec is a registry of kinds, as Vitess registers vindexes: each
// resolver package (hashring, rangeresolver, lookup, ...) registers its kind
// in an init function, so Unmarshal knows every kind whose package the
// program imports. A resolver serialises to a JSON object tagged by "kind";
// nested resolvers are objects of the same form, so a lookup whose default is
// a hash ring round-trips without losing a setting. Decoders use DecodeStrict,
// which rejects unknown (and wrongly cased) fields; every decoding error is a
// *ConfigError naming the field ("default.collections[1]").
//
// A program may add a kind of its own the same way: Register its DecodeFunc
// (and RegisterWork its cost), decode with DecodeStrict, and build errors
// with Invalid and InField so they name the field as the built-in kinds'
// do. These four are the kit for a kind; the rest of the codec's plumbing
// is internal.
//
// Resolvers are pure, immutable values: safe for concurrent use, never
// mutated, swapped whole when configuration changes.
//
// # Optional capabilities
//
// Beyond the Resolver contract a resolver may offer small extra interfaces,
// which callers detect with a type assertion (docs/design.md, "The resolver
// contract", lists them): Kinded (its JSON kind), KeyDefiner (the key it
// reads documents by), TextResolver (placement by a key's text, without
// allocating), Owner (collections that hold documents they do not own, as
// during a transition) and Freezer (writes to moving keys refused, as
// during a transition's cutover).
package resolver
