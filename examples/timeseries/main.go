// Time series: a range resolver gives each month a collection; a query over
// a time window reads only the months it touches.
//
//	go run ./examples/timeseries
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
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func month(m time.Month) rangeresolver.Range[time.Time] {
	start := time.Date(2026, m, 1, 0, 0, 0, 0, time.UTC)
	return rangeresolver.Range[time.Time]{Low: start, High: start.AddDate(0, 1, 0).Add(-time.Nanosecond)}
}

func run(ctx context.Context, out io.Writer) error {
	var entries []rangeresolver.Entry[time.Time]
	for m := time.January; m <= time.March; m++ {
		entries = append(entries, rangeresolver.Entry[time.Time]{Range: month(m), Target: resolver.LinkTarget(fmt.Sprintf("dbs/metrics/colls/2026-%02d", m))})
	}
	r, err := rangeresolver.New(resolver.MustKeyDef("/at"), entries, resolver.LinkTarget("dbs/metrics/colls/overflow"))
	if err != nil {
		return err
	}
	st := memstore.New(nil)
	defer st.Close()
	var width int
	client := router.New(st, &router.Options{MaxDegreeOfParallelism: -1, Hooks: router.Hooks{FanOut: func(_ context.Context, _ string, w int) { width = w }}})
	if err := client.Register("dbs/metrics", r); err != nil {
		return err
	}
	if _, err := client.EnsureCollections(ctx, "dbs/metrics", nil); err != nil {
		return err
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 100; i++ {
		doc := map[string]any{"id": fmt.Sprint("m", i), "at": at.Format(time.RFC3339), "cpu": 20 + i%50}
		if _, err := client.Create(ctx, "dbs/metrics", doc, nil); err != nil {
			return err
		}
		at = at.Add(31 * time.Hour)
	}
	window := rangeresolver.Range[time.Time]{Low: time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC), High: time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC)}
	links, err := r.ResolveForRead(window)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "10-20 February lives in %v\n", links)
	rows, err := client.Query(ctx, "dbs/metrics", store.Query{
		Text: "SELECT VALUE MAX(c.cpu) FROM c WHERE c.at >= @from AND c.at <= @to",
		Parameters: []store.Param{
			{Name: "@from", Value: window.Low.Format(time.RFC3339)},
			{Name: "@to", Value: window.High.Format(time.RFC3339)},
		},
	}, &router.QueryOptions{PartitionKey: window, MaxDegreeOfParallelism: -1})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("no samples between %s and %s", window.Low, window.High)
	}
	fmt.Fprintf(out, "peak CPU, 10-20 February: %s (read %d collection)\n", rows[0], width)
	count, err := client.Query(ctx, "dbs/metrics", store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "all samples: %s across %d collections\n", count[0], width)
	return nil
}
