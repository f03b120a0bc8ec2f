// Package docshard is the front door of the SDK: Open reads a
// configuration file (or OpenConfig takes one built in Go) and returns a
// ready routing client on the configured store — the embedded store, in
// memory or durable in a directory, or Azure Cosmos DB (and docshard
// serve) through the cosmos backend — with every database's resolver in
// force, following the database's shared state when the store holds one.
// Importing this package registers every resolver kind, so resolver JSON
// decodes with no blank imports.
//
//	c, err := docshard.Open(ctx, "app.yaml", nil)
//	if err != nil { ... }
//	defer c.Close()
//	_, err = c.Create(ctx, "dbs/app", order, nil)
//
// The packages underneath (resolver kinds, router, store, shardstate,
// transition) remain the API for everything Open does not decide for you.
package docshard
