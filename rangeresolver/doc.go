// Package rangeresolver is docshard's range resolver (kind "range"): each
// target owns an inclusive range of key values [Low, High], as the
// DocumentDB .NET SDK's RangePartitionResolver did. It suits keys with an
// order that queries follow: event times partitioned by month, account
// numbers by block, names by initial.
//
//	{"kind": "range", "partitionKey": "/eventTime", "keyType": "time",
//	 "ranges": [{"low": "2026-01-01T00:00:00Z", "high": "2026-01-31T23:59:59Z", "target": "dbs/app/colls/jan"}],
//	 "default": "dbs/app/colls/overflow"}
//
// A resolver has one key type, its "keyType":
//
//   - "string": Go string keys, compared byte by byte (strings.Compare). For
//     UTF-8 that is Unicode code-point order. It is not a language's
//     collation: "Z" < "a" < "é", and "10" < "9".
//   - "number": keys of any Go integer or float type and json.Number,
//     compared as float64 (integers beyond 2^53 round, as JSON readers do).
//     Bounds are finite; NaN is never a key.
//   - "time": time.Time keys, or strings in RFC 3339 (what Go's
//     time.RFC3339Nano layout parses: "2026-01-31T23:59:59Z",
//     "2026-01-31T23:59:59.5+01:00"; no date-only form, no space for the
//     "T", no Unix numbers). Times compare as instants, so
//     "2026-02-01T01:00:00+01:00" and "2026-02-01T00:00:00Z" are the same
//     key. In JSON a bound keeps its offset; a Go bound whose offset RFC
//     3339 cannot write (seconds, beyond ±23:59) is kept in UTC.
//
// A key of another type is an error wrapping resolver.ErrKeyType (a string
// for a number resolver, a number for a time resolver, a composite key for
// any). A composite partitionKey is rejected: arrays have no order here.
//
// Placement. Ranges may not overlap (checked when the resolver is built or
// decoded, naming both ranges); several ranges may share a target (the
// first quarter's months in one collection, say). A create goes to the one
// range holding the key, found by binary search, else to the default
// target, else it is an error wrapping resolver.ErrNoTarget naming the key.
// A read takes a key or a whole Range ("every event of January") and
// returns the targets of every range meeting it, plus the default's when
// part of the query lies outside every range (exactly: adjacent ranges such
// as [..., "b"] and ["b\x00", ...], or a time range ending one nanosecond
// before the next begins, leave no gap). A nested resolver is asked for the
// part of the query inside its range, and gives all its links when it
// cannot place a range (a hash ring). ResolveForRead(nil) returns every
// link once: ranges in key order, then the default.
//
// Targets are collection links or nested resolvers of any kind; a nested
// resolver is handed the key as given (a time string is not reformatted).
//
// A Resolver is immutable and safe for concurrent use. Building one sorts
// its ranges (O(n log n)); placing a key is a binary search, with no lock
// and no allocation for string, number and time.Time keys (a time string
// costs a parse).
package rangeresolver
