// Searchindex: keep a second store in sync from a sharded database's one
// change feed (router.Client.Changes) while the database is resharded
// from 2 collections to 3 under live writes. The "search index" is a map
// standing in for Elasticsearch, a cache or an event stream. It reads the
// feed from one continuation token, whatever the collections; the
// reshard's copies and clean-up never reach it, so it indexes each
// product once per change. Products are soft-deleted (a "deleted" flag),
// since a change feed in latest-version mode carries no deletions.
//
// It ends by comparing the index with the database and exits non-zero when
// they differ.
//
//	go run ./examples/searchindex
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/transition"
)

// Product is an application document; sku is its partition key.
type Product struct {
	ID      string `json:"id"`
	SKU     string `json:"sku"`
	Title   string `json:"title"`
	Price   int    `json:"price"`
	Deleted bool   `json:"deleted,omitempty"`
	Rev     int    `json:"rev"` // the product's write count
}

const db = "dbs/shop"

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func ring(n int) (resolver.Resolver, error) {
	links := make([]string, n)
	for i := range links {
		links[i] = fmt.Sprintf("%s/colls/products%d", db, i)
	}
	return hashring.New(links, &hashring.Options{PartitionKey: resolver.MustKeyDef("/sku")})
}

// indexer is the search index and what keeps it: the products by id, the
// feed's position, and how many changes it applied.
type indexer struct {
	client  *router.Client
	cont    string
	index   map[string]Product
	rev     map[string]int // the last revision seen of each product
	applied int
	repeats int // changes that were no newer than the last seen: none expected
}

// poll reads the feed from the index's position and applies every page,
// until a page is caught up.
func (ix *indexer) poll(ctx context.Context) error {
	for {
		page, err := ix.client.Changes(ctx, db, &router.ChangeOptions{Continuation: ix.cont})
		if err != nil {
			return err
		}
		for _, item := range page.Items {
			var p Product
			if err := json.Unmarshal(item, &p); err != nil {
				return err
			}
			if p.Rev <= ix.rev[p.ID] {
				ix.repeats++ // a reshard's copy would show up here
			}
			ix.rev[p.ID] = p.Rev
			if p.Deleted {
				delete(ix.index, p.ID)
			} else {
				ix.index[p.ID] = p
			}
			ix.applied++
		}
		ix.cont = page.Continuation // a real indexer keeps it with the index
		if page.CaughtUp {
			return nil
		}
	}
}

func run(ctx context.Context, out io.Writer) error {
	st := memstore.New(nil)
	defer st.Close()
	two, err := ring(2)
	if err != nil {
		return err
	}
	client := router.New(st, nil)
	// Following the shared state lets the reshard switch this client over.
	// A lease of 5 s rides out a busy host's pauses; a poll of 20 ms sees
	// the reshard's steps at once.
	f, err := client.Follow(ctx, db, &router.FollowOptions{Seed: two, PollInterval: 20 * time.Millisecond, LeaseDuration: 5 * time.Second})
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := client.EnsureCollections(ctx, db, nil); err != nil {
		return err
	}
	for i := range 500 {
		p := Product{ID: fmt.Sprint(i), SKU: fmt.Sprintf("sku-%03d", i), Title: fmt.Sprintf("Product %d", i), Price: 100 + i, Rev: 1}
		if _, err := client.Create(ctx, db, p, nil); err != nil {
			return err
		}
	}

	ix := &indexer{client: client, index: map[string]Product{}, rev: map[string]int{}}
	if err := ix.poll(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "indexed %d products from 2 collections\n", len(ix.index))

	// Writers change prices and soft-delete products while the database
	// is resharded to 3 collections; the indexer keeps polling.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	var mu sync.Mutex
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		revs := map[string]int{}
		for {
			select {
			case <-stop:
				return
			default:
			}
			i := rng.IntN(500)
			id := fmt.Sprint(i)
			revs[id] = max(revs[id], 1) + 1
			p := Product{ID: id, SKU: fmt.Sprintf("sku-%03d", i), Title: fmt.Sprintf("Product %d", i), Price: rng.IntN(1000), Deleted: rng.IntN(20) == 0, Rev: revs[id]}
			if _, err := client.Upsert(ctx, db, p, nil); err != nil {
				mu.Lock()
				writeErr = errors.Join(writeErr, err)
				mu.Unlock()
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	three, err := ring(3)
	if err != nil {
		return err
	}
	resharded := make(chan error, 1)
	var prog *transition.Progress
	go func() {
		var err error
		// Logger: the reshard's steps go to out, beside the index's lines.
		prog, err = transition.Reshard(ctx, st, db, three, &transition.ReshardOptions{
			Logger: slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		resharded <- err
	}()
	for waiting := true; waiting; {
		select {
		case err := <-resharded:
			if err != nil {
				return err
			}
			waiting = false
		default:
			if err := ix.poll(ctx); err != nil {
				return err
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	close(stop)
	wg.Wait()
	if writeErr != nil {
		return writeErr
	}
	if err := ix.poll(ctx); err != nil {
		return err
	}
	if ix.repeats > 0 {
		return fmt.Errorf("the feed gave %d changes no newer than the index had (reshard copies?)", ix.repeats)
	}
	fmt.Fprintf(out, "resharded to 3 collections: %d documents copied, %d sources cleaned up; the index saw none of them\n", prog.Copied+prog.CaughtUp, prog.Deleted)

	rows, err := client.Query(ctx, db, store.Query{Text: "SELECT c.id, c.sku, c.title, c.price, c.rev FROM c WHERE NOT (c.deleted ?? false)"}, nil)
	if err != nil {
		return err
	}
	want := map[string]Product{}
	for _, r := range rows {
		var p Product
		if err := json.Unmarshal(r, &p); err != nil {
			return err
		}
		want[p.ID] = p
	}
	if !maps.Equal(want, ix.index) {
		return fmt.Errorf("the index is out of sync: %d products in it, %d in the database", len(ix.index), len(want))
	}
	fmt.Fprintf(out, "index in sync: %d products, equal to the database (%d changes applied)\n", len(ix.index), ix.applied)
	return nil
}
