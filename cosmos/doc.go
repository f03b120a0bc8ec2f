// Package cosmos is the Azure Cosmos DB backend of docshard: a store.Store
// over the official Go SDK, azcosmos. Every collection link a resolver names
// ("dbs/{db}/colls/{coll}") is a Cosmos DB container in that database,
// created with the partition-key path (or a hierarchical key's paths, kind
// MultiHash), default TTL and indexing policy of its store.CollectionSpec.
//
// Authentication is an account key (read it from DOCSHARD_STORE_KEY; the
// store never prints it) or any azcore.TokenCredential, so
// azidentity.DefaultAzureCredential works. A database, or a single
// collection, can be bound to another account with Options.Accounts, so a
// sharded database grows past one account.
//
// Point operations pass the partition-key value (taken from the document's
// body at the container's key path when the caller gives none). A document
// with no value there has the undefined key, store.None, which is sent as
// Cosmos DB's partition-key header [{}] (azcosmos cannot build it; a policy
// of the client's pipeline writes it: see undefinedkey.go). Queries
// made of filters and projections run on the service as they are, scoped
// to a partition-key value when one is given: by the key's header and, for
// an emulator that ignores the header, by the key's value in the WHERE too
// (a null or undefined key value, which emulators compare differently,
// runs here instead); a plain count within one partition key runs there
// too, so one number comes back. The Cosmos DB gateway that the
// Go SDK talks to runs only filters and projections across partitions, and
// the router's per-collection rewrites (sort keys and partial aggregates in
// object constructors) are docshard's own SQL, so a query with ORDER BY,
// TOP, OFFSET/LIMIT, aggregates, DISTINCT, GROUP BY or JOIN runs here: the
// store reads the matching documents with a query the gateway serves (the
// partition key and, when it safely can, the WHERE pushed down) and
// evaluates the whole query with docshard's own engine (package query),
// which follows Cosmos DB's semantics. That costs reading the documents the
// filter matches; scope queries with a partition key where you can.
// Against docshard serve (Open), whose query extension
// (x-docshard-whole-query) answers any query whole with the same engine,
// every query runs on the server. The read feed pages through
// "SELECT * FROM c".
//
// ExecuteBatch runs a transactional batch (store.Batcher) with the SDK's
// ExecuteTransactionalBatch: checked here first as the embedded store
// checks it, then one round trip; a failed operation comes back as a
// *store.BatchError at its index.
//
// Fencing (store.Fencer) needs a server that refuses a stale write
// atomically with it, which Cosmos DB cannot do. Open tells docshard serve
// from other endpoints: against docshard serve it returns a FencedStore,
// whose stamped writes carry their epoch in docshard's extension header
// x-docshard-epoch and whose RaiseFence and Fence read the database with
// x-docshard-raise-fence and x-docshard-fence (package emulator); against
// Cosmos DB (and cosmium) it returns the plain Store, which is not a
// Fencer and ignores store.WriteOptions.Epoch. There the window in which a
// router that has not seen a new resolver may still write is not closed by
// a fence: it is to be bounded by router leases in the shared state
// (package shardstate, planned; docs/design.md, "Not built yet").
//
// Continuation tokens are the store's own: they wrap the service's token
// and an offset, so paging works even where the service ignores page sizes,
// and a token from another query is refused.
//
// The Store is a store.ChangeFeeder over azcosmos's ReadChangeFeed (Cosmos
// DB's change feed in its latest-version mode): its token wraps azcosmos's
// composite token, bound to the collection and partition key; FromNow asks
// every feed range for its present position (If-None-Match "*") before it
// returns. Cosmos DB orders changes within a physical partition; see
// Store.ReadChanges. A transactional batch's documents come together (the
// service commits a batch as one transaction, one LSN), in no set order
// among themselves.
//
// Errors map to the store's sentinels by status code: 400 bad request, 404
// not found, 409 conflict, 412 precondition failed, 413 too large, 429
// throttled (with the service's x-ms-retry-after-ms, as the error's
// RetryAfter). The store itself retries no 429 by default (azcosmos's own
// policy still sends a read once more after a 5xx, a 408 or a connection
// that failed before sending, as the SDK always does): throttled and
// transient failures belong to docshard's one retry layer (package
// store/retry), which the router, a reshard, the spillover coordinator and
// the shared state run their calls through, and which waits the service's
// retry-after; so one throttled call makes at most that layer's
// Policy.MaxAttempts requests. Options.MaxThrottleRetries turns the SDK's
// own retry of 429s on, for a store used without the layer. A rejected
// request is final, and a write is never sent twice by the store.
package cosmos
