// Package config reads docshard's configuration file: which store to use
// (the embedded store in memory or in a directory, or Azure Cosmos DB) and
// the resolver of each database. Files are YAML, JSON or TOML, read through
// viper; environment variables with the prefix DOCSHARD_ override the store
// settings (DOCSHARD_STORE_KIND, DOCSHARD_STORE_PATH,
// DOCSHARD_STORE_ENDPOINT), and the Cosmos DB account key comes only from
// DOCSHARD_STORE_KEY, never from the file. With kind cosmos,
// store.accounts binds databases or single collections to other accounts
// (see Account), each key read from the variable its keyEnv names.
//
//	store:
//	  kind: embedded        # embedded | cosmos
//	  path: ./data          # embedded: directory for durable data; empty = in memory
//	databases:
//	  - link: dbs/app
//	    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0, dbs/app/colls/u1]}
//
// Resolver definitions are decoded with resolver.Unmarshal, so they accept
// every kind whose package the program imports and reject anything
// malformed with an error naming the database and the field.
package config
