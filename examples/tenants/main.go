// Multi-tenant: a lookup gives the big tenant a collection of its own and
// sends every other tenant to a shared hash ring; the resolver round-trips
// through its JSON form, as processes share it.
//
//	go run ./examples/tenants
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"

	// The kinds the JSON below uses.
	_ "github.com/docshard/docshard/hashring"
	_ "github.com/docshard/docshard/lookup"
)

const definition = `{
  "kind": "lookup", "partitionKey": "/tenant",
  "entries": {"bigcorp": "dbs/saas/colls/bigcorp"},
  "default": {"kind": "hash", "collections": ["dbs/saas/colls/shared0", "dbs/saas/colls/shared1"]}
}`

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	r, err := resolver.Unmarshal([]byte(definition))
	if err != nil {
		return err
	}
	st := memstore.New(nil)
	defer st.Close()
	client := router.New(st, nil)
	if err := client.Register("dbs/saas", r); err != nil {
		return err
	}
	if _, err := client.EnsureCollections(ctx, "dbs/saas", nil); err != nil {
		return err
	}
	tenants := []string{"bigcorp", "acme", "initech", "hooli", "bigcorp"}
	for i, tenant := range tenants {
		doc := map[string]any{"id": fmt.Sprint("order-", i), "tenant": tenant, "amount": 10 * (i + 1)}
		if _, err := client.Create(ctx, "dbs/saas", doc, nil); err != nil {
			return err
		}
		l, _ := r.ResolveForCreate(tenant)
		fmt.Fprintf(out, "%-8s -> %s\n", tenant, l)
	}
	// A tenant's query touches only its collection.
	rows, err := client.Query(ctx, "dbs/saas", store.Query{Text: "SELECT VALUE SUM(c.amount) FROM c"}, &router.QueryOptions{PartitionKey: "bigcorp"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "bigcorp total: %s\n", rows[0])
	all, err := client.Query(ctx, "dbs/saas", store.Query{Text: "SELECT c.tenant, COUNT(1) AS orders FROM c GROUP BY c.tenant"}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "orders per tenant, across %d collections: %d groups\n", 3, len(all))
	return nil
}
