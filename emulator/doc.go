// Package emulator serves a docshard store over Azure Cosmos DB's REST API,
// as the official SDKs speak it, so that many processes (docshard's own
// cosmos backend, or any Cosmos DB SDK) share one embedded store exactly as
// they would share a Cosmos DB account. "docshard serve" runs it over the
// durable store of a directory; tests run it over an in-memory one
// (package emulatortest).
//
// The Server is an http.Handler. It checks every request's master-key
// signature (HMAC-SHA256 over the verb, resource type, resource link and
// x-ms-date, within 15 minutes of the server's clock), or the official
// emulator's Entra ID token (EmulatorTokenKeyID; only with DefaultKey or
// Options.AcceptEmulatorTokens, since anyone who knows the key can mint
// one), routes by the resource path as the service's gateway reads it
// (decoded twice, '\' as '/', cut at '#', trailing spaces and empty
// segments dropped, a control character refused), and answers with
// Cosmos DB's statuses, headers (etag,
// x-ms-request-charge, x-ms-continuation, x-ms-item-count,
// x-ms-session-token, x-ms-activity-id, lsn; named in lower case on
// HTTP/1.1 too, as the service names them) and error bodies ({"code",
// "message"}). It serves: the database account (as the official
// emulator answers it: Strong consistency, one region); databases (create, read,
// list, query, delete; the store has none, so the emulator keeps the ones
// created through it in a catalog file); containers (create with a
// single-path Hash partition key or a hierarchical MultiHash one of 2 to 3
// paths; default TTL, indexing policy, unique keys, which the store
// enforces, and the vector embedding, full-text and computed-property
// policies, kept; read, list, query, replace of those but the partition
// key and unique keys, over a store.Replacer; delete); offers (the
// throughput of a database or container created with one, manual or
// autoscale: read, query, replace; kept in the catalog file, never
// enforced); partition-key
// ranges (one range covering every key); documents (create, read, replace,
// upsert, delete, patch; ids scoped by partition key); transactional
// batches (the store's store.Batcher: 200 with every operation's result,
// or 207 Multi-Status with the failing operation's status and 424 for the
// others; a patch in a batch applies to the document as the operations
// before it leave it); queries (with parameters and paging, run by the store's own
// engine over the collection's one range: a query scoped to a partition
// key or to the range, as the SDKs send a plan's rewritten query per
// range, is answered whole; one sent across partitions is answered as
// Cosmos DB's gateway answers it: refused without
// x-ms-documentdb-query-enablecrosspartition, refused with 400, sub-status
// 1004 and the query's plan in the body when the client must merge it
// (ORDER BY, aggregates, DISTINCT, GROUP BY, TOP, OFFSET/LIMIT), and paged
// as the service pages; query-plan requests get the service's plan, built
// by query.PlanGateway); the read feed;
// and the change feed in its latest-version mode (A-IM: Incremental feed;
// If-None-Match absent, "*" or the etag of an earlier answer;
// If-Modified-Since; 304 when nothing changed; the etag of every answer is
// the position to resume from), from a store that is a
// store.ChangeFeeder, as azcosmos's ReadChangeFeed reads it. A batch's
// documents are in the change feed as the store gives them one LSN each,
// next to each other. docs/serve.md ("What it leaves out") lists what it
// refuses (bulk, stored procedures and the like, users and
// permissions).
//
// Beyond Cosmos DB's API it serves docshard's fencing extension, when the
// store is a store.Fencer: a write stamped with HeaderEpoch below its
// database's fence is refused with 412 and body code CodeFenced (and
// HeaderFence), atomically with the write; a database read answers
// HeaderServe and HeaderFence, and raises the fence first when it carries
// HeaderRaiseFence. The cosmos backend speaks it (cosmos.Open). Its query
// extension, HeaderWholeQuery, gets any query answered whole, as the
// cosmos backend asks of serve rather than merge what the server can
// answer itself.
//
// What it costs: the store's own work plus HTTP and JSON. A point
// operation adds the system properties the store does not keep (_rid,
// _self, _attachments), its _rid from the document's place in the store's
// read feed (store.Document.Seq); query results that are whole documents,
// the read feed and the change feed add them too, at a look-up of that
// place per document (memstore.Store.Seqs) and a copy of each; other query
// results are passed through as the engine wrote them.
package emulator
