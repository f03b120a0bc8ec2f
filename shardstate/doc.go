// Package shardstate keeps the shared state of a sharded database in the
// store itself, as Cosmos DB's change-feed processor keeps its leases in a
// container: nothing else has to run for many processes to agree on how a
// database is sharded.
//
// The state of database dbs/{db} is one document in the collection
// dbs/{db}/colls/_docshard: the resolver every router routes by (its JSON,
// as package resolver writes it), a version that grows by exactly one per
// change, an epoch for fencing (raised by changes that routers must see
// before they write again), a phase (where a long-running change such as a
// reshard stands), and who changed it, when and why (State.Reason). A
// long-running change keeps its working progress (a reshard's positions,
// its owner's heartbeat) in a progress document beside it (SaveProgress),
// which makes no version, so the history is the changes themselves. Every change
// is a compare-and-swap on the document's ETag, so of two concurrent
// writers exactly one wins and the other gets a *ConflictError carrying the
// state that won. The versions a change supersedes are kept as history
// documents in the same collection, each written before the change that
// supersedes it, so the history holds exactly the winners.
//
// Routers hold leases in the same collection: a lease document each router
// renews on every poll, naming the version it routes by. WaitForRouters lets
// a change wait until every router has acknowledged it or its lease has
// lapsed, judged by how long the lease document has gone unchanged on the
// waiter's own clock, so no two clocks need to agree. On a store that is a
// store.Fencer (the embedded store, in process or through docshard serve), a
// change with a new epoch also raises the store's fence, and the store
// refuses writes stamped with an older epoch atomically with the write;
// elsewhere leases bound the window (see docs/design.md#shared-state).
//
// Package router follows a state document (router.Client.Follow): it polls
// it, swaps its resolver when the version changes, renews its lease, and
// stamps its writes with the epoch.
package shardstate
