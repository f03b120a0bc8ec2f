package transition_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/transition"
)

// BenchmarkReshard measures, on the durable embedded store, in one run:
// the store's raw create rate with as many writers as the reshard copies
// collections at once; the reshard's copy rate (documents copied per second
// between its "published" and "copied" steps), and their ratio (target:
// at least 0.5); and, with a steady writer adding a document a millisecond
// to keys that move, the latency of those writes (p99 and max; target: the
// freeze holds such a write at most 1 s at p99).
//
//	go test -run '^$' -bench Reshard -benchtime 1x -count 3 ./transition
func BenchmarkReshard(b *testing.B) {
	const n, par = 20000, 4
	for range b.N {
		b.StopTimer()
		ctx := context.Background()
		st, err := memstore.Open(b.TempDir(), nil)
		require.NoError(b, err)
		two, three := ring(b, 2), ring(b, 3)

		// Raw creates: par writers into a scratch collection.
		require.NoError(b, st.CreateCollection(ctx, "dbs/raw/colls/x", &store.CollectionSpec{PartitionKeyPath: "/userId"}))
		start := time.Now()
		var wg sync.WaitGroup
		for w := range par {
			wg.Go(func() {
				for i := w; i < n; i += par {
					body := fmt.Appendf(nil, `{"id":"r%d","userId":"u%d","v":1,"pad":"%0200d"}`, i, i%500, i)
					if _, err := st.Create(ctx, "dbs/raw/colls/x", body, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		rawRate := float64(n) / time.Since(start).Seconds()

		c, f := seedRouted(b, st, two, n, par, 200)
		var moving []string
		for i := 0; len(moving) < 50; i++ {
			k := fmt.Sprintf("m%d", i)
			a, _ := two.ResolveForCreate(k)
			z, _ := three.ResolveForCreate(k)
			if a != z {
				moving = append(moving, k)
			}
		}

		// The steady writer.
		stop := make(chan struct{})
		var lat []time.Duration
		var failed atomic.Int64
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				t0 := time.Now()
				body := fmt.Appendf(nil, `{"id":"w%d","userId":%q,"v":1}`, i, moving[i%len(moving)])
				if _, err := c.Create(ctx, db, body, nil); err != nil {
					failed.Add(1)
					continue
				}
				lat = append(lat, time.Since(t0))
			}
		})
		step, copyRate := copyWindow()
		b.StartTimer()
		prog, err := transition.Reshard(ctx, st, db, three, &transition.ReshardOptions{Parallelism: par, Step: step, Logger: quiet})
		b.StopTimer()
		close(stop)
		wg.Wait()
		require.NoError(b, err)
		require.Zero(b, failed.Load())
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(rawRate, "raw-creates/s")
		b.ReportMetric(copyRate(prog), "copied/s")
		b.ReportMetric(copyRate(prog)/rawRate, "copy/raw")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-write-ms")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-write-ms")
		require.NoError(b, f.Close())
		require.NoError(b, st.Close())
	}
}

// BenchmarkReshardRate measures how well ReshardOptions.Rate holds: a
// reshard 2 → 3 of 10,000 documents on the durable embedded store with a
// cap of 500 copies a second (well below what the copy reaches unlimited,
// even on a busy host), reporting the copy rate between the "published" and "copied" steps and
// its ratio to the cap (target: within 10%, 0.9–1.1).
//
//	go test -run '^$' -bench ReshardRate -benchtime 1x -count 3 ./transition
func BenchmarkReshardRate(b *testing.B) {
	const n, par, limit = 10000, 4, 500.0
	for range b.N {
		b.StopTimer()
		st, err := memstore.Open(b.TempDir(), nil)
		require.NoError(b, err)
		_, f := seedRouted(b, st, ring(b, 2), n, par, 0)
		step, copyRate := copyWindow()
		b.StartTimer()
		prog, err := transition.Reshard(context.Background(), st, db, ring(b, 3), &transition.ReshardOptions{Parallelism: par, Rate: limit, Step: step, Logger: quiet})
		b.StopTimer()
		require.NoError(b, err)
		b.ReportMetric(copyRate(prog), "copied/s")
		b.ReportMetric(copyRate(prog)/limit, "rate/limit")
		require.NoError(b, f.Close())
		require.NoError(b, st.Close())
	}
}

// seedRouted follows db on st with seed as its first resolver, creates its
// collections, and writes n documents (with pad bytes of padding) through
// the router, par writers at once.
func seedRouted(b *testing.B, st store.Store, seed resolver.Resolver, n, par, pad int) (*router.Client, *router.Follower) {
	ctx := context.Background()
	c, f := followEnsured(ctx, b, st, &router.FollowOptions{Seed: seed, PollInterval: 100 * time.Millisecond})
	var wg sync.WaitGroup
	for w := range par {
		wg.Go(func() {
			for i := w; i < n; i += par {
				body := fmt.Appendf(nil, `{"id":"s%d","userId":"u%d","v":1,"pad":"%0*d"}`, i, i%500, pad, 0)
				if _, err := c.Create(ctx, db, body, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return c, f
}

// copyWindow returns a ReshardOptions.Step that notes when the copy starts
// ("published") and ends ("copied"), and the copy's rate from those times.
func copyWindow() (step func(string) error, rate func(*transition.Progress) float64) {
	var start, end time.Time
	return func(s string) error {
			switch s {
			case "published":
				start = time.Now()
			case "copied":
				end = time.Now()
			}
			return nil
		}, func(p *transition.Progress) float64 {
			return float64(p.Copied) / end.Sub(start).Seconds()
		}
}

// quiet is the benchmarks' logger: their output stays the figures.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
