// Package router is docshard's routing client: what applications call. It
// wraps a store.Store as the DocumentDB .NET SDK's DocumentClient wrapped
// its PartitionResolvers: the application registers a resolver for a
// database link, then creates, reads, replaces, deletes and queries against
// the database, never against a collection.
//
// Writes go where ResolveForCreate puts the document's key; point reads,
// replaces and deletes look in every collection ResolveForRead names, in
// order, so a document is found while a transition moves it. Queries fan out
// to the collections the key narrows to (all of them without a key), in
// parallel up to MaxDegreeOfParallelism, and merge on the client with the
// plan of package query: ORDER BY streams through a heap, TOP and
// OFFSET/LIMIT are widened per collection and applied once, aggregates and
// GROUP BY combine partial results, DISTINCT applies last. A Pager returns
// pages with a continuation token that spans collections: resuming from any
// page yields exactly the rest.
//
// Resolvers are swapped whole (Register again) under live traffic; each
// call reads the resolver once, so no request sees half of a change.
// Throttled store calls are retried after the store's retry-after, bounded
// in attempts and total wait, and always within the caller's context.
package router
