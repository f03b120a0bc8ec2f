// Package retry is docshard's one retry layer: every store call the
// project makes (the router's, a reshard's, the spillover coordinator's,
// the shared state's) runs through a Store of this package, which retries
// throttled and transiently failed calls under one Policy and reports each
// attempt to Hooks (metrics and tracing spans, with the call's context).
//
// The policy lives in one file, policy.go: the classifier (Retryable)
// decides which failures are tried again, modelled on etcd clientv3's
// retry interceptor: each call is repeatable or not; a throttled call (the
// service did not apply it) and one that never left (a refused connection)
// are retried whatever they are; a call whose outcome is unknown
// (store.ErrUnavailable) only when it is repeatable (reads, queries, feeds,
// upserts, replaces, conditional deletes; a plain create is not, unless the
// caller marks its context with Repeatable). One backoff (doubling from
// Policy.DefaultWait to Policy.MaxBackoff, jittered) applies where the
// store gives no retry-after; the store's retry-after (Cosmos DB's
// x-ms-retry-after-ms) is honoured as given. Policy.MaxAttempts and
// Policy.MaxWait bound each call.
//
// Wrap keeps every optional capability of the wrapped store (store.ChangeFeeder,
// store.Fencer, store.Batcher, and whatever package store declares next):
// the wrapped value offers exactly those its store offers, each retried
// alike, so a type assertion for a capability sees through the layer. The
// combinations are generated from store/capabilities.go (go generate), and
// a test fails when a capability is not wired.
//
// Exactly one layer retries: the cosmos backend leaves throttled requests
// to this one (its SDK's own retry of 429s is off by default).
package retry
