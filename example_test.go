package docshard_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/docshard/docshard"
	"github.com/docshard/docshard/store"
)

// Open a configuration file into a ready client: the file names the store
// (here the durable embedded store in a directory next to it) and each
// database's resolver.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "docshard-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "app.yaml")
	_ = os.WriteFile(path, []byte(`
store: {kind: embedded, path: `+filepath.Join(dir, "data")+`}
databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/o0, dbs/app/colls/o1]}
`), 0o600)

	c, err := docshard.Open(ctx, path, &docshard.Options{EnsureCollections: true})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	type Order struct {
		ID     string `json:"id"`
		UserID string `json:"userId"`
		Total  int    `json:"total"`
	}
	for i, user := range []string{"ann", "bob", "cy", "dee"} {
		if _, err := c.Create(ctx, "dbs/app", Order{ID: fmt.Sprint(i), UserID: user, Total: 10 * i}, nil); err != nil {
			log.Fatal(err)
		}
	}
	rows, err := c.Query(ctx, "dbs/app", store.Query{Text: "SELECT VALUE SUM(c.total) FROM c"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(rows[0]))
	// Output: 60
}
