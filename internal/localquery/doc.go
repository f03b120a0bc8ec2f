// Package localquery evaluates a query over one collection's documents
// here rather than in a store's engine, page by page: the router's view of
// collections shared during a transition and the Cosmos DB backend's local
// evaluation read the documents through a Source and call Call.Page; the
// embedded store, which evaluates over its own snapshots, shares the rest
// of the sequence (Begin: the parameters, the binding hash and the
// continuation token; Token.Next).
//
// It is the one place that builds a query's parameter map (Params), binds
// a continuation token to its query (Hash) and reads and writes a local
// evaluation's token (Token), and that decides how a page whose kept
// results are gone resumes: by position in the collection, never at an
// offset into a re-run (Split, Pos, Restart). It knows the store contract
// and package query; nothing imports it but the stores and the router.
package localquery
