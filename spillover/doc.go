// Package spillover holds the spillover resolver (kind "spillover") and
// its Coordinator, which keep a database writing to one collection at a
// time and opening the next when it fills, as the .NET SDK's
// SpilloverPartitionResolver sample did, made safe for many processes.
//
// New documents go to the newest collection; reads go to every collection,
// newest first (ResolveForRead of a rangeresolver.Range of the range key,
// when the resolver is told of one, only to those that may hold it). The
// collections are a prefix and consecutive sequence numbers ("log0",
// "log1", ...). Which one is newest changes only through the database's
// shared state (package shardstate): a Coordinator in each writing process
// reads the newest collection's usage on a schedule (soon after a write was
// throttled, at once after one was refused for quota), and when it reaches
// the fill ratio of the limit, records the opening in the state's phase,
// creates the next collection from the template, and publishes the
// resolver naming it with a new epoch, all by compare-and-swap. Two
// processes never open two collections (the name follows from the state,
// and one swap wins); a process that dies half-way leaves a phase that the
// next check finishes; on a store that fences (the embedded store, docshard
// serve) no write by the old epoch lands in the sealed collection once the
// successor is published.
//
// The limit (maxDocuments, maxBytes) is one no collection exceeds: the
// collections are created with it as their quota
// (store.CollectionSpec.Quota), which the embedded store and docshard serve
// enforce atomically with each write; a write refused for it
// (store.ErrQuotaExceeded) makes the coordinator open the next collection,
// and the router sends the write there. On Cosmos DB, which has no such
// quota, the check alone bounds a collection. docs/design.md#spillover
// gives the protocol and docs/design.md#the-limit the limit.
package spillover
