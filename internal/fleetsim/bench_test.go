package fleetsim

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// serveMax is the largest fleet BenchmarkFleet runs through docshard
// serve by default (FLEETSIM_SERVE_MAX changes it): past it, this 2-core
// machine cannot answer the fleet's requests (two per router per second,
// each an HTTP request to the server in the same process) within a poll
// interval, so the figures would measure the machine, not the protocol.
const serveMax = 1000

// BenchmarkFleet runs a fleet of N followers on the router's defaults
// (poll 1 s, lease 5 s) against the embedded store and against docshard
// serve (in process, through one cosmos backend: azcore's clients share
// one HTTP transport whatever, and opening one per follower took
// seconds each at N = 1,000 on a loaded machine), and reports
// the steady state's RU/s (in total and on the busiest logical partition),
// how long one published change took to reach the routers (p50, p99, max)
// and WaitForRouters to return, and what the change cost:
//
//	go test ./internal/fleetsim -run '^$' -bench Fleet -benchtime 1x -timeout 30m
//
// Each run takes about 10 s plus the start of the fleet (N/1,000 s at
// least: the followers' polls are spread over the interval) and the
// change. docs/performance.md ("Control plane of a fleet") has the
// figures and the model.
func BenchmarkFleet(b *testing.B) {
	max := serveMax
	if s := os.Getenv("FLEETSIM_SERVE_MAX"); s != "" {
		var err error
		if max, err = strconv.Atoi(s); err != nil {
			b.Fatalf("FLEETSIM_SERVE_MAX=%q: %v", s, err)
		}
	}
	for _, backend := range []string{"embedded", "serve"} {
		for _, n := range []int{10, 100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/N=%d", backend, n), func(b *testing.B) {
				if backend == "serve" && n > max {
					b.Skipf("N=%d through serve is past FLEETSIM_SERVE_MAX=%d (see serveMax)", n, max)
				}
				for range b.N {
					benchRun(b, backend, n)
				}
			})
		}
	}
}

func benchRun(b *testing.B, backend string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o := Options{N: n, Logf: b.Logf}
	var st store.Store
	switch backend {
	case "embedded":
		st = memstore.New(nil)
	case "serve":
		srv, err := emulatortest.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		if st, err = emulatortest.Backend(ctx, srv.Endpoint); err != nil {
			b.Fatal(err)
		}
	}
	defer st.Close()
	res, err := Run(ctx, st, "dbs/app", o)
	if err != nil {
		b.Fatal(err)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(res.RUPerSecond, "RU/s")
	b.ReportMetric(res.BusiestRUPerSecond, "RU/s-busiest")
	b.ReportMetric(res.RUPerSecond/float64(n), "RU/s-per-router")
	b.ReportMetric(res.PollRate, "poll-rate")
	b.ReportMetric(ms(res.Quantile(0.5)), "ms-p50")
	b.ReportMetric(ms(res.Quantile(0.99)), "ms-p99")
	b.ReportMetric(ms(res.Max()), "ms-max")
	b.ReportMetric(ms(res.Wait), "ms-wait")
	b.ReportMetric(ms(res.Published), "ms-publish")
	b.ReportMetric(res.ChangeRU, "RU-change")
	b.ReportMetric(res.Publish.RU, "RU-publish+wait")
	b.Logf("N=%d %s: start %s; poll rate %.2f; steady %.0f RU/s over %s, busiest %s %.0f RU/s; publish %s; propagation p50 %s p99 %s max %s; wait %s; change %.0f RU over steady (publish and wait %.0f RU: %d lease queries, %d leases read)",
		n, backend, res.Start.Round(time.Millisecond), res.PollRate, res.RUPerSecond, res.SteadyFor.Round(time.Millisecond), res.Busiest, res.BusiestRUPerSecond,
		res.Published.Round(time.Millisecond), res.Quantile(0.5).Round(time.Millisecond), res.Quantile(0.99).Round(time.Millisecond), res.Max().Round(time.Millisecond),
		res.Wait.Round(time.Millisecond), res.ChangeRU, res.Publish.RU, res.Publish.Calls[Query], res.Publish.Docs)
}
