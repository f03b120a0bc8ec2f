package lookup_test

import (
	"fmt"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/lookup"
	"github.com/docshard/docshard/resolver"
)

// A multi-tenant database: two large tenants have collections of their
// own, every other tenant goes to a hash ring of shared collections.
func ExampleNew() {
	ring, err := hashring.New([]string{"dbs/app/colls/shared0", "dbs/app/colls/shared1"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := lookup.New(resolver.MustKeyDef("/tenant"), map[string]resolver.Target{
		"bigcorp":  resolver.LinkTarget("dbs/app/colls/bigcorp"),
		"megacorp": resolver.LinkTarget("dbs/app/colls/megacorp"),
	}, resolver.ResolverTarget(ring))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, doc := range []string{
		`{"id":"o1","tenant":"bigcorp"}`,
		`{"id":"o2","tenant":"acme"}`,
		`{"id":"o3","tenant":"umbrella"}`,
	} {
		key, _ := r.PartitionKey([]byte(doc))
		link, _ := r.ResolveForCreate(key)
		fmt.Println(key, "->", link)
	}
	all, _ := r.ResolveForRead(nil)
	fmt.Println(all)
	data, _ := resolver.Marshal(r)
	fmt.Println(string(data))
	// Output:
	// bigcorp -> dbs/app/colls/bigcorp
	// acme -> dbs/app/colls/shared1
	// umbrella -> dbs/app/colls/shared0
	// [dbs/app/colls/bigcorp dbs/app/colls/megacorp dbs/app/colls/shared0 dbs/app/colls/shared1]
	// {"kind":"lookup","partitionKey":"/tenant","entries":{"bigcorp":"dbs/app/colls/bigcorp","megacorp":"dbs/app/colls/megacorp"},"default":{"kind":"hash","collections":["dbs/app/colls/shared0","dbs/app/colls/shared1"],"virtualNodes":16,"hash":"md5"}}
}

// Regions by number, with no default: a value without an entry is an
// error naming it. Numbers find their entry by canonical text, whatever
// their Go type.
func ExampleNewValues() {
	r, err := lookup.NewValues(resolver.MustKeyDef("/region"), map[int]resolver.Target{
		1: resolver.LinkTarget("dbs/app/colls/eu"),
		2: resolver.LinkTarget("dbs/app/colls/us"),
	}, resolver.Target{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, key := range []any{1, 2.0, "2", 3} {
		link, err := r.ResolveForCreate(key)
		fmt.Printf("%v (%T): %s %v\n", key, key, link, err)
	}
	// Output:
	// 1 (int): dbs/app/colls/eu <nil>
	// 2 (float64): dbs/app/colls/us <nil>
	// 2 (string): dbs/app/colls/us <nil>
	// 3 (int):  resolver: no collection for partition key: key 3 (int): no entry for this value and no default
}
