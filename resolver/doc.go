// Package resolver holds the contract every docshard partition resolver
// implements, and what they share: partition-key extraction from documents
// (Cosmos DB JSON paths, composite keys, zero-copy scanning of raw JSON), the
// canonical text a key is hashed as (RFC 8785 numbers), targets that are either
// a collection link or a nested resolver, and the JSON codec for resolver
// trees.
//
// The codec is a registry of kinds, as Vitess registers vindexes: each
// resolver package (hashring, rangeresolver, lookup, ...) registers its kind
// in an init function, so Unmarshal knows every kind whose package the
// program imports. A resolver serialises to a JSON object tagged by "kind";
// nested resolvers are objects of the same form, so a lookup whose default is
// a hash ring round-trips without losing a setting.
//
// Resolvers are pure, immutable values: safe for concurrent use, never
// mutated, swapped whole when configuration changes.
package resolver
