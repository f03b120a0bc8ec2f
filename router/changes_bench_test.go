package router_test

import (
	"slices"
	"testing"
	"time"

	"github.com/docshard/docshard/internal/proctest"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// BenchmarkChangeFeed compares reading a database's change feed from its
// beginning to its end through the router (Changes: one token over every
// collection, the shared state read twice a call) with reading each
// collection's feed on the store directly, one after another (what a
// consumer without Changes does): 8 collections of a database that
// follows its shared state, 40,000 documents of about 1 KB, pages of
// 1,000 documents a collection. It reports documents a second of each and
// the median over iterations of the ratio of their speeds (db/sum, each
// iteration timing both, in turns: the target is at least 0.8), and the
// same ratio by the process's CPU time (db/sum-cpu: on a shared host, time
// slices lost to other processes inflate wall time but not CPU time).
//
//	go test -run '^$' -bench 'ChangeFeed' -benchtime 20x -count 6 ./router
func BenchmarkChangeFeed(b *testing.B) {
	const colls, docs = 8, 40000
	st := memstore.New(nil)
	b.Cleanup(func() { _ = st.Close() })
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: ring(b, colls)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	if _, err := c.EnsureCollections(ctx, db, nil); err != nil {
		b.Fatal(err)
	}
	for i := range docs {
		if _, err := c.Create(ctx, db, benchDoc(i), nil); err != nil {
			b.Fatal(err)
		}
	}
	sum := func() int {
		n := 0
		for _, l := range links(colls) {
			cont := ""
			for {
				p, err := st.ReadChanges(ctx, l, &store.ChangeFeedOptions{Continuation: cont, PageSize: 1000, HideReshard: true})
				if err != nil {
					b.Fatal(err)
				}
				n += len(p.Items)
				cont = p.Continuation
				if len(p.Items) == 0 {
					break
				}
			}
		}
		return n
	}
	whole := func() int {
		n, cont := 0, ""
		for {
			p, err := c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont, PageSize: 1000})
			if err != nil {
				b.Fatal(err)
			}
			n += len(p.Items)
			cont = p.Continuation
			if p.CaughtUp {
				return n
			}
		}
	}
	if got := whole(); got != docs {
		b.Fatalf("the database's feed read %d documents, want %d", got, docs)
	}
	if got := sum(); got != docs {
		b.Fatalf("the collections' feeds read %d documents, want %d", got, docs)
	}
	var tSum, tDB, cSum, cDB time.Duration
	var ratios, cpuRatios []float64
	b.ResetTimer()
	for i := range b.N {
		// Alternate which goes first, so neither always reads a warmer cache.
		var ds, dd, cs, cd time.Duration
		for j := range 2 {
			start := time.Now()
			cpu0, _ := proctest.CPU()
			if (i+j)%2 == 0 {
				sum()
				ds = time.Since(start)
				cpu1, _ := proctest.CPU()
				cs = cpu1 - cpu0
			} else {
				whole()
				dd = time.Since(start)
				cpu1, _ := proctest.CPU()
				cd = cpu1 - cpu0
			}
		}
		tSum, tDB, cSum, cDB = tSum+ds, tDB+dd, cSum+cs, cDB+cd
		ratios = append(ratios, ds.Seconds()/dd.Seconds())
		if cd > 0 {
			cpuRatios = append(cpuRatios, cs.Seconds()/cd.Seconds())
		}
	}
	n := float64(b.N * docs)
	b.ReportMetric(n/tSum.Seconds(), "sum-docs/s")
	b.ReportMetric(n/tDB.Seconds(), "db-docs/s")
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "db/sum")
	if len(cpuRatios) > 0 {
		slices.Sort(cpuRatios)
		b.ReportMetric(cpuRatios[len(cpuRatios)/2], "db/sum-cpu")
	}
}
