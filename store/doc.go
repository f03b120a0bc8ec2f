// Package store is the backend contract of docshard: what a document
// database must do so the router can put collections on it. It is kept
// minimal, like database/sql/driver: collections (create from a spec, delete,
// list, usage), documents (create, read, replace, upsert, delete, with an
// If-Match ETag precondition and the partition-key value where the backend
// needs it), queries in Cosmos DB SQL with @parameters, paged with opaque
// continuation tokens, and a read feed that walks every document of a
// collection in a stable, resumable order.
//
// Errors are *Error values wrapping one of the sentinels (ErrNotFound,
// ErrConflict, ErrPreconditionFailed, ErrThrottled, ErrTooLarge,
// ErrBadRequest, ...), so callers test them with errors.Is and read details
// (status, retry-after) with errors.As.
//
// Backends: store/memstore (embedded, in memory or durable on disk) and the
// cosmos package (Azure Cosmos DB). store/storetest is the conformance suite
// every backend runs.
package store
