// Package jsontext reads and writes JSON text in place, for the hot paths
// that encoding/json is too general for: finding a partition key in a
// document without decoding it, validating a document for the embedded
// store in one pass, reading the router's ORDER BY rows, and writing
// canonical keys and query results.
//
// One Scanner serves them all. It walks the bytes without building values
// and without recursion, checking the syntax of everything it passes over;
// its Mode says how much more it checks: Lenient (what key extraction has
// always done: it stops at the key, and a string's invalid UTF-8 decodes to
// U+FFFD) or Strict (what the store needs: valid UTF-8 and numbers a float64
// holds, so an accepted document is one encoding/json decodes unchanged).
// Nesting is bounded by MaxDepth in both. On top of it sit iterators over
// members and elements, FindMember, and Scalar, which views a string,
// number or literal in place; Quoted and AppendUnescaped decode strings
// exactly as encoding/json does.
//
// One writer serves every JSON string and number the module writes by
// hand: AppendString and AppendNumber take a Policy, Canonical (RFC 8785,
// for keys) or Result (encoding/json's text without HTML escaping, for query
// results). GoNumber is the module's one normaliser of Go numbers to the
// float64 JSON holds.
//
// Everything here allocates nothing on its own (given room in the caller's
// buffers), except for containers nested more than 64 deep and for
// escaped strings decoded into new memory.
package jsontext
