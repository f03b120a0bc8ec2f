// Package routerotel reports a routing client's work to OpenTelemetry: it
// builds router.Hooks that record metrics (the fan-out width of each
// query, the latency of every store call, retried calls, the documents
// query pages return) and open a span for every store call attempt, named
// after the operation and carrying the collection, as a child of the
// caller's span; the store call runs with that span's context, so the
// backend's own spans (azcosmos's HTTP requests) are its children. It lives in its own package so the router
// itself depends on no telemetry library.
//
//	hooks, err := routerotel.Hooks(nil) // the global providers
//	client := router.New(st, &router.Options{Hooks: hooks})
package routerotel
