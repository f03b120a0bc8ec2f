// Package memstore is docshard's embedded document store: a store.Store
// that needs no set-up, in memory (New) or durable in a directory (Open).
// The demo, the examples and most tests run on it, and it answers as
// Cosmos DB does, so code tested on it behaves the same on the real
// service.
//
// # Documents
//
// A document is identified, as in Cosmos DB, by its partition-key value
// (read from the body at the collection's PartitionKeyPath, "/id" by
// default; of a hierarchical key, the values at its PartitionKeyPaths, a
// composite key whose prefixes scope queries and change feeds) and its id:
// one id may exist under two key values. A document
// with no value at the key path is stored under the "undefined" key,
// store.None, distinct from JSON null (store.Null), and is found with it.
// Reads, replaces and deletes take the key in their options; without one
// they find the id's only document, and fail with store.ErrBadRequest
// ("partition key required", naming the keys) when several key values hold
// the id, so a caller that knows only the id is served whenever that is
// unambiguous and never handed the wrong document. Create, Replace and
// Upsert take the key from the body; a key given in the options must equal
// it.
//
// A write is validated in one pass over the JSON text, without decoding
// it: one object, a string "id" (store.ValidateID: 1 to 1,023 bytes of UTF-8), a
// key value that is a string, number, boolean or null, at most 2 MB stored
// (system properties included), nesting at most 10,000 deep, numbers a
// float64 holds, valid UTF-8; "id", "ttl" and the key's property at most
// once. A document that fails is refused with an error wrapping
// store.ErrBadRequest (or ErrTooLarge) that names the problem, its byte
// offset and the id when there is one, and nothing is written. The stored
// text is the caller's, with "_etag" (quoted, new on every write) and
// "_ts" (seconds) appended; whatever the caller put in "_etag", "_ts",
// "_rid", "_self" or "_attachments" is dropped. A failed write of any kind
// (precondition, conflict, size, bad input, a full disk) leaves the
// collection exactly as it was.
//
// If-Match applies to Replace, Delete and to an Upsert that replaces; an
// Upsert that creates, and Create, ignore it, as Cosmos DB does.
//
// # Time to live
//
// A collection's DefaultTTL and a document's "ttl" follow Cosmos DB: no
// expiry without a DefaultTTL (a document's "ttl" is then ignored, but a
// "ttl" other than -1 or 1 to 2^31-1 is refused all the same); -1
// turns expiry on with none by default; a document's "ttl" (-1, or 1 to
// 2^31-1 seconds) overrides the default. A document expires ttl seconds
// after its last write, by Options.Clock. An expired document is at once
// invisible to reads, queries, the feed and usage, and its id is free; it
// is removed from memory (and, durably, from disk) lazily: by later writes
// to the collection, queries, feeds and CollectionInfo, and by Open.
//
// # Queries and the feed
//
// Queries run on package query, docshard's Cosmos DB SQL engine, over a
// snapshot of the collection in feed order (with a partition key, only the
// documents under it). Each document is decoded the first time a query
// reads it and the decoded form is kept beside its text and shared by
// every later query, so a create stays cheap and queries never re-parse. A
// query scoped to a key decodes only that key's documents, and one that
// never looks inside its documents (SELECT VALUE COUNT(1) FROM c) decodes
// none. The decoded form shares the text's memory for its strings
// (query.NewDoc), so it costs about two thirds of the text for documents
// of a few larger strings (BenchmarkFilterScale: a store holds 1.96 bytes
// of heap per byte of 1 KB documents after querying them, 1.35 before).
// A paged query keeps a cursor (Options.Cursors): a query whose rows each
// come from one document (filters, projections, JOINs) is read as its scan
// goes, a page running over only the documents it needs; a sorted query
// over whole documents whose results may not fit the first page keeps only
// their sorted positions and projects each page when it is read; any other
// query keeps its results. Its continuation token is bound to the
// collection, query text, parameters and key; see Store.Query.
//
// The read feed walks documents in order of creation (a replace keeps a
// document's place), resumable from its token, which holds a position, not
// a snapshot: see Store.ReadFeed.
//
// # Change feed
//
// The Store is a store.ChangeFeeder: every create, replace and upsert
// stamps the document with its collection's next log sequence number
// (LSN), and ReadChanges returns the current documents in LSN order from a
// position, as Cosmos DB's change feed does in its "latest version" mode (a
// document written several times appears once, at its last write; deletions
// and TTL expiries do not appear). An index ordered by LSN makes a page
// cost two binary searches and its own documents. A reader never passes a
// durable write that has taken its LSN and not yet published, so polling
// from a token sees every later write, in order; durably the LSN is kept in
// each record, and positions survive a restart (see Store.ReadChanges). A
// transactional batch gives each document it writes an LSN, in the order
// of its last write in the batch, and they appear together; a batch that
// fails appears not at all, and gives up the LSNs it reserved as a failed
// single write does.
//
// # Transactional batch and fencing
//
// The Store is a store.Batcher: ExecuteBatch applies up to 100 operations
// on documents of one partition-key value of one collection together or
// not at all. It validates every operation first, takes the write locks
// of the documents it names (in a fixed order, so batches never deadlock),
// runs the operations in order on a private view (a read sees the writes
// before it), commits every change in one bbolt transaction, and publishes
// them under the collection's lock in one step: no reader, query or feed
// page sees part of a batch, and a crash leaves all of it on disk or none
// (TestDurableSurvivesSIGKILL writes batches too).
//
// The Store is also a store.Fencer: each database has a fence epoch, kept
// durably in the file's "fences" bucket, that only goes up. A write
// stamped with an epoch (WriteOptions.Epoch, BatchOptions.Epoch) holds its
// database's fence for reading from its check until its change is
// committed and published; RaiseFence holds it for writing, so it waits
// for the stamped writes in progress and every stamped write either
// finished before the raise or sees the new fence. A write below the fence
// is refused with store.ErrFenced and writes nothing (it takes no LSN
// either). Unstamped writes (epoch 0) never touch the fence and cost
// nothing more; a stamped one costs an uncontended read lock.
//
// # Durability
//
// Open keeps every collection and document in memory as well, so reads and
// queries cost the same as in memory and never wait for the disk, and
// writes through to a bbolt file in the directory. A write returns once it
// is on disk (fsync). Concurrent writers share commits: one committer
// goroutine takes every write queued while the previous commit was
// syncing and commits them in one bbolt transaction, so N writers cost
// about one commit instead of N (group commit; see the package benchmarks).
// A process killed at any moment reopens with every acknowledged write,
// and with change-feed positions that stay valid;
// TestDurableSurvivesSIGKILL checks both. Each record carries a format
// version; Open converts records of older versions in place (version 2's
// key text, and an LSN for records from before the change feed, given in
// the order of their last write). The data set must fit in memory:
// roughly the stored text, plus the decoded form of documents that have
// been queried (see Queries), plus the file's page cache. Open reads the
// file once, checking and copying its records on GOMAXPROCS goroutines
// (BenchmarkOpen200K). A read-only store (Options.ReadOnly, what the
// command line's reading commands use) loads each collection on its first
// use instead, so a command that reads one collection of many pays for that
// one; a damaged collection is then reported, as a *CorruptError wrapped in
// store.ErrUnavailable, by the calls that use it rather than by Open.
//
// # Costs
//
// The Store is safe for concurrent use. A point read is a map lookup under
// a read lock (about 200 ns); a create of a 1 KB document validates and
// copies it (about 1-2 µs in memory); writers of different documents run
// in parallel, writers of one document are serialised by a lock striped
// over 1,024 mutexes.
package memstore
