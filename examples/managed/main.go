// Managed collections: a hash ring whose collections come from a template
// (a prefix, a count, and the spec each is created with); they are created
// when the program starts, and growing the count reshards through the
// transition manager while the data stays readable.
//
//	go run ./examples/managed
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/docshard/docshard/managed"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/transition"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

const db = "dbs/app"

func run(ctx context.Context, out io.Writer) error {
	ttl := 30 * 24 * 3600 // a month
	r, err := managed.New(db, "users", 2, &managed.Options{PartitionKey: resolver.MustKeyDef("/userId"),
		Template: &store.CollectionSpec{DefaultTTL: &ttl}})
	if err != nil {
		return err
	}
	text, err := resolver.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "resolver: %s\n", text)
	st := memstore.New(nil)
	defer st.Close()
	created, err := managed.Ensure(ctx, st, r)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "created %v\n", created)
	client := router.New(st, nil)
	follower, err := client.Follow(ctx, db, &router.FollowOptions{Seed: r, PollInterval: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	defer follower.Close()
	for i := range 300 {
		doc := map[string]any{"id": fmt.Sprint(i), "userId": fmt.Sprint("user", i%60), "score": i}
		if _, err := client.Create(ctx, db, doc, nil); err != nil {
			return err
		}
	}
	// Three collections: the third is created from the template, and the
	// documents whose place changes move while the router keeps routing.
	p, err := managed.Resize(ctx, st, db, 3, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "resized to 3: %d documents scanned, %d moved\n", p.Scanned, p.Deleted)
	cur, err := managed.Current(ctx, st, db)
	if err != nil {
		return err
	}
	rep, err := transition.Verify(ctx, st, db, cur)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "verify: %d documents, each once where the ring puts it: %v\n", rep.Documents, rep.OK())
	info, err := st.CollectionInfo(ctx, db+"/colls/users2")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "users2: partitioned by %s, default TTL %d s\n", info.Spec.PartitionKeyPath, *info.Spec.DefaultTTL)
	return nil
}
