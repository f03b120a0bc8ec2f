// Package router is docshard's routing client: what applications call. It
// wraps a store.Store as the DocumentDB .NET SDK's DocumentClient wrapped
// its PartitionResolvers: the application registers a resolver for a
// database link, then creates, reads, replaces, deletes and queries against
// the database, never against a collection.
//
// # Routing
//
// Writes go where ResolveForCreate puts the document's key. Point reads,
// replaces and deletes take (id, key) and look in every collection
// ResolveForRead names, in order, first hit wins (a resolver moving keys
// names the new placement first, so a document is found on either side).
// A replace that changes the key (the caller
// gives the old one) moves the document: create at the new place, then
// delete the old copy on condition of its ETag, so a crash leaves at worst
// a duplicate, never a loss. EnsureCollections creates the collections a
// resolver names from a template, partitioned by the resolver's key path.
//
// Resolvers are swapped whole (Register again) under live traffic: the
// registry is immutable, behind an atomic pointer; each call reads it
// once, so no call sees half of a change and none is lost. Resolvers are
// pure values, so each registration memoises the placement of string keys
// (Options.RouteCacheSize): a point operation on a key placed before costs
// a map lookup and a hash-table probe on top of the store call.
//
// # Queries
//
// A query fans out to the collections its partition key narrows to (all of
// them without a key) and merges on the client by the plan of package
// query, exactly as one collection holding every document would answer:
// ORDER BY streams through a heap of one row per collection (Cosmos DB's
// order across types, ties broken by collection so the merge is
// deterministic), TOP and OFFSET/LIMIT are widened per collection and
// applied once (with ORDER BY over many collections, each collection is
// first probed for a few rows, twice an even share, and asked for the rest
// only when the merge reaches the end of its probe), aggregates and GROUP
// BY combine partial results (AVG from sums and counts), DISTINCT applies
// again after the merge, and a query over a FROM subquery that looks
// across collections (COUNT of a DISTINCT subquery) merges the subquery by
// its own plan and runs the query over its results (query.Nested). Store
// calls run
// in parallel up to MaxDegreeOfParallelism (the zero value means the
// client's default, automatic unless set; 1 is serial) and read ahead
// within MaxBufferedItemCount. A shape that cannot be merged exactly is refused
// with the planner's error naming the construct. An ORDER BY row is read in
// one pass: its sort keys decoded in place (strings alias the store's
// page), its payload passed on as the store wrote it.
//
// A Pager returns pages with a continuation token that spans collections:
// per collection, the store continuation of the page being read, the page
// size it was fetched with and how many of its rows were consumed (a
// resumed pager refetches and skips), plus the OFFSET/LIMIT still to apply;
// aggregates, GROUP BY, nested plans and DISTINCT without ORDER BY are recomputed and
// skipped by position. Tokens are versioned, compact (binary, compressed
// when that helps, base64url), checksummed, and bound to the database, the
// query text, its parameters, the partition key and the collections:
// anything else is an error wrapping ErrBadContinuation.
//
// # Failures
//
// Every store call runs through the project's one retry layer (package
// store/retry, under Options.Retry): throttled calls (store.ErrThrottled)
// and calls that never reached the store are retried, and transient
// failures (store.ErrUnavailable) of calls safe to repeat, after the
// store's retry-after or a backoff, bounded in attempts and total wait,
// within the caller's context; a create is never sent twice after an
// outcome the router cannot know. A collection failing mid-query fails
// the query, or with QueryOptions.PartialResults is left out and named
// (*PartialError). Hooks report fan-out width, per-call latency, retries
// and documents returned, each with the call's context, and open a span
// per store call attempt whose context the store call runs with.
package router
