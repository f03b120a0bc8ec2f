// Package memstore is docshard's embedded document store: a store.Store
// that needs no set-up, in memory (New) or durable in a directory (Open).
// It is what the demo, the examples and most tests run on.
//
// Documents follow Cosmos DB's rules: ids of at most 255 bytes without
// '/', '\', '?' or '#'; documents of at most 2 MB; identity by (partition-key
// value, id), so one id may exist under two key values; "_etag" and "_ts"
// set on every write; If-Match preconditions; default and per-document TTL.
// Queries run on docshard's own Cosmos DB SQL engine (package query), over
// documents decoded once and kept; paging uses server-side cursors with a
// validated continuation token, and re-runs the query when a cursor has
// been evicted. The read feed walks documents in creation order (a replace
// keeps a document's place), resumable from its continuation token.
//
// Durable mode keeps every document in memory as well (reads never touch
// the disk) and writes through to a bbolt database in the directory. Writes
// to different documents proceed in parallel and share commits: bbolt's
// Batch gathers concurrent transactions into one fsync (group commit), and
// a write is acknowledged only once it is on disk. A process killed at any
// moment reopens with every acknowledged write.
//
// The Store is safe for concurrent use. Costs: a point read is a map lookup
// under a read lock; a create validates the JSON and appends the system
// properties without decoding the document; the first query over a
// document decodes it once.
package memstore
