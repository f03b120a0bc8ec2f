// Spillover: an event log written to one collection at a time; when the
// newest fills up, a coordinator opens the next one through the shared
// state, and every router moves on to it. Reads go to all collections, and
// a range of the events' sequence numbers reads only those that may hold it.
//
//	go run ./examples/spillover
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/docshard/docshard/rangeresolver"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/spillover"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

const db = "dbs/events"

func run(ctx context.Context, out io.Writer) error {
	// Collections log0, log1, ... of at most 100 events, the next opened at
	// 80; events carry a sequence number the resolver can narrow reads by.
	seed, err := spillover.New([]string{db + "/colls/log0"}, &spillover.Options{
		PartitionKey: resolver.MustKeyDef("/id"), CollectionPrefix: "log", MaxDocuments: 100, FillRatio: 0.8,
		RangeKey: resolver.MustKeyDef("/seq"), RangeType: spillover.RangeNumber,
	})
	if err != nil {
		return err
	}
	st := memstore.New(nil)
	defer st.Close()
	// The coordinator checks on its schedule (here: only when asked, to
	// keep the output the same every run) and after throttled writes.
	coord, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: seed, CheckInterval: time.Hour,
		OnOpen: func(l string, v int64) { fmt.Fprintf(out, "opened %s (state version %d)\n", l, v) }})
	if err != nil {
		return err
	}
	defer coord.Close()
	var width int
	client := router.New(st, &router.Options{Hooks: router.Hooks{Call: coord.Observe, FanOut: func(_ context.Context, _ string, w int) { width = w }}})
	follower, err := client.Follow(ctx, db, &router.FollowOptions{PollInterval: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	defer follower.Close()

	for seq := range 250 {
		if seq%10 == 0 {
			opened, err := coord.Check(ctx)
			if err != nil {
				return err
			}
			// Routers learn of an opening when they next poll; refreshing
			// here moves this one on at once, so every run writes the
			// same events to the same collections.
			if opened != "" {
				if err := follower.Refresh(ctx); err != nil {
					return err
				}
			}
		}
		if _, err := client.Create(ctx, db, map[string]any{"id": fmt.Sprint("e", seq), "seq": seq}, nil); err != nil {
			return err
		}
	}
	// Record the sealed collections' sequence bounds, so range reads skip them.
	s := follower.State()
	r, err := s.Decode()
	if err != nil {
		return err
	}
	for _, l := range r.(*spillover.Resolver).Unmeasured() {
		if err := coord.Measure(ctx, l); err != nil {
			return err
		}
	}
	if err := follower.Refresh(ctx); err != nil {
		return err
	}
	r, err = follower.State().Decode()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "collections: %v\n", r.(*spillover.Resolver).Collections())
	for _, l := range r.(*spillover.Resolver).Collections() {
		info, err := st.CollectionInfo(ctx, l)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  %s: %d events\n", l, info.Documents)
	}
	count, err := client.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "all events: %s across %d collections\n", count[0], width)
	window := rangeresolver.Range[float64]{Low: 100, High: 120}
	rows, err := client.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c WHERE c.seq >= 100 AND c.seq <= 120"},
		&router.QueryOptions{PartitionKey: window})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "events 100 to 120: %s (read %d collections)\n", rows[0], width)
	return nil
}
