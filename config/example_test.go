package config_test

import (
	"fmt"

	"github.com/docshard/docshard/config"
	_ "github.com/docshard/docshard/hashring" // registers the "hash" kind
	_ "github.com/docshard/docshard/lookup"   // registers the "lookup" kind
)

// A configuration names the store and each database's resolver; resolvers
// nest (here a lookup whose default is a ring), and values keep their case.
func ExampleParse() {
	cfg, err := config.Parse([]byte(`
store:
  kind: embedded
databases:
  - link: dbs/app
    resolver:
      kind: lookup
      partitionKey: /tenant
      entries: {BigCorp: dbs/app/colls/bigcorp}
      default: {kind: hash, collections: [dbs/app/colls/shared0, dbs/app/colls/shared1]}
`), "yaml")
	if err != nil {
		panic(err)
	}
	db, err := cfg.Database("dbs/app")
	if err != nil {
		panic(err)
	}
	for _, tenant := range []string{"BigCorp", "bigcorp", "acme"} {
		l, err := db.Resolver.ResolveForCreate(tenant)
		if err != nil {
			panic(err)
		}
		fmt.Println(tenant, "->", l)
	}
	fmt.Println(cfg.Store.Kind)

	// Mistakes name the database and the field.
	_, err = config.Parse([]byte(`{"databases": [{"link": "dbs/app", "resolver": {"kind": "hash", "collections": ["dbs/app/colls/a", "dbs/app/colls/a"]}}]}`), "json")
	fmt.Println(err)
	// Output:
	// BigCorp -> dbs/app/colls/bigcorp
	// bigcorp -> dbs/app/colls/shared0
	// acme -> dbs/app/colls/shared1
	// embedded
	// invalid configuration: databases[0] (dbs/app): resolver: invalid definition: resolver.collections[1] = "dbs/app/colls/a": duplicate link (also collections[0] "dbs/app/colls/a")
}
