// Package emulator serves a docshard store over Azure Cosmos DB's REST API,
// as the official SDKs speak it, so that many processes (docshard's own
// cosmos backend, or any Cosmos DB SDK) share one embedded store exactly as
// they would share a Cosmos DB account. "docshard serve" runs it over the
// durable store of a directory; tests run it over an in-memory one
// (package emulatortest).
//
// The Server is an http.Handler. It checks every request's master-key
// signature (HMAC-SHA256 over the verb, resource type, resource link and
// x-ms-date, within 15 minutes of the server's clock), routes by the
// resource path, and answers with Cosmos DB's statuses, headers (etag,
// x-ms-request-charge, x-ms-continuation, x-ms-item-count,
// x-ms-session-token, x-ms-activity-id, lsn) and error bodies ({"code",
// "message"}). It serves: the database account; databases (create, read,
// list, query, delete; the store has none, so the emulator keeps the ones
// created through it in a catalog file); containers (create with a
// single-path Hash partition key; default TTL, indexing policy, unique
// keys, which the store enforces, and the vector embedding, full-text and
// computed-property policies, kept; read, list, query, replace of those
// but the partition key and unique keys, over a store.Replacer; delete);
// offers (the throughput of a database or container created with one,
// manual or autoscale: read, query, replace; kept in the catalog file,
// never enforced); partition-key
// ranges (one range covering every key); documents (create, read, replace,
// upsert, delete, patch; ids scoped by partition key); transactional
// batches (the store's store.Batcher: 200 with every operation's result,
// or 207 Multi-Status with the failing operation's status and 424 for the
// others); queries (single- and cross-partition, with parameters and
// paging, answered whole by the store's own engine, so ORDER BY,
// aggregates, DISTINCT, GROUP BY, TOP and OFFSET/LIMIT need no client-side
// merging; query-plan requests are answered accordingly); the read feed;
// and the change feed in its latest-version mode (A-IM: Incremental feed;
// If-None-Match absent, "*" or the etag of an earlier answer;
// If-Modified-Since; 304 when nothing changed; the etag of every answer is
// the position to resume from), from a store that is a
// store.ChangeFeeder, as azcosmos's ReadChangeFeed reads it. A batch's
// documents are in the change feed as the store gives them one LSN each,
// next to each other. docs/serve.md ("What it leaves out") lists what it
// refuses (patch operations in a batch, bulk, stored procedures and the
// like, users and permissions).
//
// Beyond Cosmos DB's API it serves docshard's fencing extension, when the
// store is a store.Fencer: a write stamped with HeaderEpoch below its
// database's fence is refused with 412 and body code CodeFenced (and
// HeaderFence), atomically with the write; a database read answers
// HeaderServe and HeaderFence, and raises the fence first when it carries
// HeaderRaiseFence. The cosmos backend speaks it (cosmos.Open).
//
// What it costs: the store's own work plus HTTP and JSON. A point
// operation adds a SHA-256 of the document's key and id (for its _rid) and
// a copy of the document to add the system properties the store does not
// keep (_rid, _self, _attachments); query results are passed through as
// the engine wrote them.
package emulator
