// Package fleetsim measures what a fleet of routers following a database's
// shared state costs the store, in Cosmos DB's request units (RU), and how
// fast a published change reaches the fleet.
//
// A Counter charges every call made through the stores it wraps (Wrap)
// from a table of request charges (Charges, from Microsoft's published
// figures), by kind of call and by logical partition (collection link and
// partition-key value). The wrapped store keeps every optional capability
// of the store it wraps (store.ChangeFeeder, store.Fencer, store.Batcher,
// ...), by the same generated code as the retry layer (internal/storecap),
// so the protocol under measurement behaves exactly as it would unwrapped.
//
// Run starts a fleet of followers, each a router.Client of its own
// following the database's state (router.Client.Follow) under its own
// router id, as the processes of a fleet do, sharing nothing but the
// store; it measures the steady state (RU/s in total and on the busiest
// logical partition), then publishes one change (shardstate.Publish, a
// new resolver and a new epoch, as a reshard's switch does) and measures
// how long each router takes to route by it, how long
// shardstate.WaitForRouters takes to return, and what the change costs.
// It works on the store interface and the public router and shardstate
// calls only, so it measures whatever protocol is in the tree.
//
// The benchmark BenchmarkFleet runs it for fleets of 10 to 10,000
// followers; docs/performance.md ("Control plane of a fleet") has the
// figures, the charge table and the model they extend by.
package fleetsim
