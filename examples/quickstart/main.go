// Quickstart: a hash ring over three collections on the embedded store,
// documents written through the router, and a query merged across the
// collections.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// User is an application document; userId is its partition key.
type User struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
	Name   string `json:"name"`
	Score  int    `json:"score"`
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	st := memstore.New(nil) // memstore.Open("./data", nil) keeps the data on disk
	defer st.Close()

	ring, err := hashring.New(
		[]string{"dbs/app/colls/users0", "dbs/app/colls/users1", "dbs/app/colls/users2"},
		&hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	if err != nil {
		return err
	}
	client := router.New(st, nil)
	if err := client.Register("dbs/app", ring); err != nil {
		return err
	}
	if _, err := client.EnsureCollections(ctx, "dbs/app", nil); err != nil {
		return err
	}

	for i := 0; i < 30; i++ {
		u := User{ID: fmt.Sprint(i), UserID: fmt.Sprintf("user-%02d", i), Name: fmt.Sprintf("User %d", i), Score: (i * 37) % 100}
		if _, err := client.Create(ctx, "dbs/app", u, nil); err != nil {
			return err
		}
	}
	where, _ := ring.ResolveForCreate("user-07")
	doc, err := client.Read(ctx, "dbs/app", "7", "user-07")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "user-07 lives in %s: %s\n", where, doc.Body)

	top, err := client.Query(ctx, "dbs/app", store.Query{
		Text:       "SELECT TOP @n c.name, c.score FROM c ORDER BY c.score DESC",
		Parameters: []store.Param{{Name: "@n", Value: 3}},
	}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "top scores across the three collections:")
	for _, row := range top {
		fmt.Fprintf(out, "  %s\n", row)
	}
	avg, err := client.Query(ctx, "dbs/app", store.Query{Text: "SELECT VALUE AVG(c.score) FROM c"}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "average score: %s\n", avg[0])
	return nil
}
