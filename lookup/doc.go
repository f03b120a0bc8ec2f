// Package lookup is docshard's lookup resolver (kind "lookup"): exact key
// values mapped to targets, with an optional default target. It is the
// single-value case of range partitioning, for keys with few, known values:
// regions, tenants, applications. A target is a collection link or a nested
// resolver of any kind, so a lookup can give its large tenants collections
// of their own and send every other tenant to a hash ring:
//
//	{"kind": "lookup", "partitionKey": "/tenant",
//	 "entries": {"bigcorp": "dbs/app/colls/bigcorp"},
//	 "default": {"kind": "hash", "collections": ["dbs/app/colls/shared0", "dbs/app/colls/shared1"]}}
//
// # Entries and key types
//
// An entry's name is the canonical text of the keys it takes, the text
// partitionkey.PlacementText gives (the text the hash ring hashes), and a key
// finds its entry by that text alone, whatever its Go type:
//
//   - a string is itself: the entry "bigcorp" takes the key "bigcorp";
//   - a number (any Go integer or float type, json.Number) is its RFC 8785
//     text: the entry "42" takes 42, 42.0, int64(42), json.Number("4.2e1")
//     and the string "42"; "1.5" takes 1.5; "1e+21" takes 1e21. An entry
//     written "1.0" or "042" takes only the string with that text;
//   - a composite key (a list of partitionKey paths) is the RFC 8785 JSON
//     text of its array: the entry `["eu",42]` takes CompositeKey{"eu", 42}.
//
// Other keys (booleans, null, times, objects) are an error wrapping
// resolver.ErrKeyType; a nil key wraps resolver.ErrNoPartitionKey. New
// takes entry names as this text, verbatim, as JSON does; NewValues takes
// typed Go values and writes their text for you.
//
// # Placement
//
// A key with an entry goes to its entry's target; any other key to the
// default; with no default it is an error wrapping resolver.ErrNoTarget
// that names the value. A nested resolver is handed the key as given, for
// creates and reads alike. Several values may share a collection (the entry
// names are distinct; their targets need not be). ResolveForRead(nil)
// returns every link once: entries in sorted name order, then the default.
//
// A Resolver is immutable and safe for concurrent use. Placing a key costs
// one map access, with no lock and no allocation (a number or composite key
// is formatted into a stack buffer first).
package lookup
