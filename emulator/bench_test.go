package emulator_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos/cosmostest"
	"github.com/docshard/docshard/emulator"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/internal/proctest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// benchServer is a server the point-operation benchmark runs against.
type benchServer struct {
	endpoint string
	client   *http.Client
	pid      int // of a server in its own process, whose CPU time is measured; 0 in this one
}

// BenchmarkPointOps32 measures point reads and creates of 1 KB documents
// through azcosmos with 32 concurrent clients (b.SetParallelism over
// GOMAXPROCS), in one run, against:
//
//   - serve-http, serve-https: the emulator over the durable store, as
//     docshard serve runs it, in this process (client and server share it);
//   - serve-proc-http: the docshard serve binary, in its own process;
//   - cosmium-http, cosmium-https: cosmium in its own process (in memory,
//     nothing durable), over plain HTTP (-DisableTls) and HTTPS;
//   - canned-http, canned-proc-http: a handler that answers every document
//     request with the same prepared response (no signature check, no
//     store), in this process and in its own: the ceiling the client and
//     net/http leave for any server, and what net/http alone costs a server.
//
// Besides the time per operation it reports CPU per operation: cpu-µs/op
// of this process (the client, plus the server when it runs here) and,
// for a server in its own process, srv-µs/op, its CPU, read from /proc.
//
//	go test -run '^$' -bench PointOps32 -benchtime 5000x -count 6 ./emulator
func BenchmarkPointOps32(b *testing.B) {
	servers := []struct {
		name  string
		start func(b *testing.B) benchServer
	}{
		{"serve-http", func(b *testing.B) benchServer {
			s := emulatortest.Start(b, &emulatortest.Options{Dir: b.TempDir()})
			return benchServer{endpoint: s.Endpoint, client: s.HTTPClient()}
		}},
		{"serve-https", func(b *testing.B) benchServer {
			s := emulatortest.Start(b, &emulatortest.Options{Dir: b.TempDir(), TLS: true})
			return benchServer{endpoint: s.Endpoint, client: s.HTTPClient()}
		}},
		{"serve-proc-http", startServeProcess},
		{"cosmium-http", func(b *testing.B) benchServer { return startCosmium(b, cosmostest.StartHTTP) }},
		{"cosmium-https", func(b *testing.B) benchServer { return startCosmium(b, cosmostest.Start) }},
		{"canned-proc-http", startCannedProcess},
		{"canned-http", func(b *testing.B) benchServer {
			emu, err := emulator.New(memstore.New(nil), nil)
			require.NoError(b, err)
			srv := httptest.NewServer(cannedDocuments(emu))
			b.Cleanup(srv.Close)
			return benchServer{endpoint: srv.URL + "/", client: loopbackClient(nil)}
		}},
	}
	parallelism := (32 + gomaxprocs() - 1) / gomaxprocs()
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			s := srv.start(b)
			ctx := context.Background()
			cc := benchContainer(b, s.endpoint, s.client)
			var next, created atomic.Int64
			ops := []struct {
				name string
				op   func() error
			}{
				{"read", func() error {
					i := next.Add(1) * 7919 % benchSeeded
					_, err := cc.ReadItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprint("k", i%50)), fmt.Sprint("s", i), nil)
					return err
				}},
				{"create", func() error {
					i := created.Add(1)
					_, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprint("k", i%50)), benchDoc("c", i), nil)
					return err
				}},
			}
			for _, o := range ops {
				b.Run(o.name, func(b *testing.B) {
					cpu := startCPU(s.pid)
					b.SetParallelism(parallelism)
					b.RunParallel(func(pb *testing.PB) {
						// Labelled, so a CPU profile tells the client's work
						// (and the transport goroutines it starts) from the
						// server's: go tool pprof -tagignore side=client.
						pprof.Do(ctx, pprof.Labels("side", "client"), func(context.Context) {
							for pb.Next() {
								if err := o.op(); err != nil {
									b.Error(err)
									return
								}
							}
						})
					})
					cpu.report(b)
				})
			}
		})
	}
}

// benchSeeded is how many documents benchContainer writes.
const benchSeeded = 1000

var benchNotes = strings.Repeat("lorem ipsum ", 80)

// benchDoc is document prefix+n of about 1 KB, under partition key
// "k"+n%50.
func benchDoc(prefix string, n int64) []byte {
	return fmt.Appendf(nil, `{"id":"%s%d","pk":"k%d","notes":%q}`, prefix, n, n%50, benchNotes)
}

// benchContainer creates the container bench/c (partition key /pk) through
// azcosmos and writes benchSeeded documents s0, s1, ... to it.
func benchContainer(b *testing.B, endpoint string, transport *http.Client) *azcosmos.ContainerClient {
	cred, err := azcosmos.NewKeyCredential(emulatortest.Key)
	require.NoError(b, err)
	c, err := azcosmos.NewClientWithKey(endpoint, cred, &azcosmos.ClientOptions{
		ClientOptions: azcore.ClientOptions{Transport: transport, Retry: policy.RetryOptions{MaxRetries: -1}}})
	require.NoError(b, err)
	ctx := context.Background()
	_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "bench"}, nil)
	require.NoError(b, err)
	db, _ := c.NewDatabase("bench")
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	require.NoError(b, err)
	cc, _ := db.NewContainer("c")
	for i := range int64(benchSeeded) {
		_, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprint("k", i%50)), benchDoc("s", i), nil)
		require.NoError(b, err)
	}
	return cc
}

// startServeProcess builds the docshard binary and runs docshard serve
// over a fresh directory, in its own process.
func startServeProcess(b *testing.B) benchServer {
	bin := proctest.Build(b, "github.com/docshard/docshard/cmd/docshard")
	return startProcess(b, exec.Command(bin, "serve", "--dir", b.TempDir(), "--addr", "127.0.0.1:0"))
}

// startCannedProcess runs cannedDocuments in its own process: this test
// binary again, as TestCannedServerProcess.
func startCannedProcess(b *testing.B) benchServer {
	p := proctest.Start(b, "TestCannedServerProcess")
	endpoint, ok := <-p.Lines
	require.True(b, ok, "TestCannedServerProcess printed no endpoint")
	return benchServer{endpoint: endpoint, client: loopbackClient(nil), pid: p.Cmd.Process.Pid}
}

// startProcess starts a server process that prints its endpoint alone on
// stdout's first line, and interrupts it when the benchmark ends.
func startProcess(b *testing.B, cmd *exec.Cmd) benchServer {
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(b, err, "%s printed no endpoint", cmd.Path)
	return benchServer{endpoint: strings.TrimSpace(line), client: loopbackClient(nil), pid: cmd.Process.Pid}
}

// TestCannedServerProcess is BenchmarkPointOps32's canned server in a
// process of its own: run by startCannedProcess, it prints its endpoint
// and serves until its stdin closes; otherwise it skips.
func TestCannedServerProcess(t *testing.T) {
	proctest.Child(t)
	emu, err := emulator.New(memstore.New(nil), nil)
	require.NoError(t, err)
	srv := httptest.NewServer(cannedDocuments(emu))
	defer srv.Close()
	proctest.Say("%s/", srv.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

func startCosmium(b *testing.B, start func() (*cosmostest.Server, error)) benchServer {
	s, err := start()
	require.NoError(b, err)
	b.Cleanup(s.Stop)
	return benchServer{endpoint: s.Endpoint, client: loopbackClient(s.CertPool), pid: s.PID()}
}

// loopbackClient keeps up to 100 idle connections, as azcosmos's own
// client does, and trusts pool's certificates for HTTPS.
func loopbackClient(pool *x509.CertPool) *http.Client {
	t := &http.Transport{MaxIdleConns: 100, MaxIdleConnsPerHost: 100, IdleConnTimeout: 90 * time.Second, ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return &http.Client{Transport: t}
}

// cannedDocuments answers every document request with one prepared
// response, as fast as a handler can, and passes the rest (account,
// databases, containers) to the emulator.
func cannedDocuments(emu http.Handler) http.Handler {
	doc := fmt.Appendf(nil, `{"id":"s1","pk":"k1","notes":%q,"_etag":"\"1\"","_ts":1,"_rid":"AAAAAAAAAAABAAAAAAAAAA==","_self":"dbs/AAAAAA==/colls/AAAAAAAAAAA=/docs/AAAAAAAAAAABAAAAAAAAAA==/","_attachments":"attachments/"}`, benchNotes)
	length := strconv.Itoa(len(doc))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "/docs") {
			emu.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", length)
		h.Set("etag", `"1"`)
		h.Set("x-ms-request-charge", "1.00")
		status := http.StatusOK
		if r.Method == http.MethodPost {
			status = http.StatusCreated
		}
		w.WriteHeader(status)
		_, _ = w.Write(doc)
	})
}

// cpuMeter measures the CPU time of this process and of a server process
// over one benchmark.
type cpuMeter struct {
	pid       int
	self, srv time.Duration
	ok, srvOK bool
}

func startCPU(pid int) *cpuMeter {
	m := &cpuMeter{pid: pid}
	m.self, m.ok = processCPU("self")
	if pid != 0 {
		m.srv, m.srvOK = processCPU(strconv.Itoa(pid))
	}
	return m
}

func (m *cpuMeter) report(b *testing.B) {
	n := float64(b.N)
	if self, ok := processCPU("self"); ok && m.ok {
		b.ReportMetric(float64((self-m.self).Microseconds())/n, "cpu-µs/op")
	}
	if m.pid == 0 {
		return
	}
	if srv, ok := processCPU(strconv.Itoa(m.pid)); ok && m.srvOK {
		b.ReportMetric(float64((srv-m.srv).Microseconds())/n, "srv-µs/op")
	}
}

// processCPU reads a process's user and system time from /proc/PID/stat
// (fields 14 and 15, in clock ticks of 10 ms); false where there is no
// /proc.
func processCPU(pid string) (time.Duration, bool) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

func gomaxprocs() int { return max(1, runtime.GOMAXPROCS(0)) }

// recorder keeps a copy of the last request of each method the client
// sent to a document.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	last map[string]*http.Request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.Contains(req.URL.Path, "/docs") {
		r.mu.Lock()
		r.last[req.Method] = req.Clone(context.Background())
		r.mu.Unlock()
	}
	return r.base.RoundTrip(req)
}

// BenchmarkHandler measures the emulator's handler alone, without the
// network or net/http's server: requests azcosmos sent (recorded, then
// replayed with their signatures, which cover the date but not the body)
// go straight to ServeHTTP. read reads one 1 KB document of 1,000; create
// adds 1 KB documents to an in-memory store, and create-durable-32 to the
// durable one from 32 goroutines (group commit, fsync).
//
//	go test -run '^$' -bench Handler -benchmem -count 6 ./emulator
func BenchmarkHandler(b *testing.B) {
	setup := func(b *testing.B, st store.Store) (*emulator.Server, map[string]*http.Request) {
		emu, err := emulator.New(st, nil)
		require.NoError(b, err)
		srv := httptest.NewServer(emu)
		b.Cleanup(srv.Close)
		rec := &recorder{base: http.DefaultTransport, last: map[string]*http.Request{}}
		cc := benchContainer(b, srv.URL+"/", &http.Client{Transport: rec})
		ctx := context.Background()
		_, err = cc.ReadItem(ctx, azcosmos.NewPartitionKeyString("k1"), "s1", nil)
		require.NoError(b, err)
		_, err = cc.CreateItem(ctx, azcosmos.NewPartitionKeyString("k1"), benchDoc("c", 1), nil)
		require.NoError(b, err)
		b.ReportAllocs()
		b.ResetTimer()
		return emu, rec.last
	}
	replay := func(emu *emulator.Server, req *http.Request, body []byte, want int) error {
		r := req.Clone(context.Background())
		if body != nil {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		w := &discardWriter{h: http.Header{}}
		emu.ServeHTTP(w, r)
		if w.status != want {
			return fmt.Errorf("status %d, want %d", w.status, want)
		}
		return nil
	}
	var seq atomic.Int64
	create := func(emu *emulator.Server, req *http.Request) error {
		return replay(emu, req, benchDoc("c", seq.Add(1)*50+1), http.StatusCreated) // under k1
	}
	b.Run("read", func(b *testing.B) {
		emu, reqs := setup(b, memstore.New(nil))
		for i := 0; i < b.N; i++ {
			if err := replay(emu, reqs[http.MethodGet], nil, http.StatusOK); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("create", func(b *testing.B) {
		emu, reqs := setup(b, memstore.New(nil))
		for i := 0; i < b.N; i++ {
			if err := create(emu, reqs[http.MethodPost]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("create-durable-32", func(b *testing.B) {
		st, err := memstore.Open(b.TempDir(), nil)
		require.NoError(b, err)
		b.Cleanup(func() { st.Close() })
		emu, reqs := setup(b, st)
		b.SetParallelism((32 + gomaxprocs() - 1) / gomaxprocs())
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := create(emu, reqs[http.MethodPost]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// discardWriter is the cheapest http.ResponseWriter: it keeps the status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
func (w *discardWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}

// BenchmarkQuery100K runs a cross-partition filter over 100,000 documents
// of about 1 KB (20,000 results) through the REST API, with azcosmos
// reading every page, against the same query on the embedded store the
// emulator serves (store: its own Query, whole). rest-raw is the REST API
// alone: a plain HTTP client sends the request azcosmos would and reads the
// one page it gets without decoding it. rest-all is azcosmos asking for
// pages as large as the store gives (x-ms-max-item-count -1: 4 MB) and
// decoding them, rest-pages-1000 the same with pages of 1,000.
//
//	go test -run '^$' -bench Query100K -benchmem -count 6 ./emulator
func BenchmarkQuery100K(b *testing.B) {
	st := memstore.New(nil)
	ctx := context.Background()
	const l = "dbs/bench/colls/q"
	require.NoError(b, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	categories := []string{"books", "music", "games", "garden", "tools"}
	for i := range 100_000 {
		doc := fmt.Appendf(nil, `{"id":"%d","userId":"user-%d","category":%q,"price":12.5,"tags":["a","b","c"],"notes":%q}`,
			i, i, categories[i%5], strings.Repeat("lorem ipsum dolor sit amet ", 33))
		_, err := st.Create(ctx, l, doc, nil)
		require.NoError(b, err)
	}
	srv := emulatortest.Start(b, &emulatortest.Options{Store: st})
	cred, err := azcosmos.NewKeyCredential(emulatortest.Key)
	require.NoError(b, err)
	c, err := azcosmos.NewClientWithKey(srv.Endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.HTTPClient()}})
	require.NoError(b, err)
	cc, err := c.NewContainer("bench", "q")
	require.NoError(b, err)
	const text = `SELECT c.id, c.price FROM c WHERE c.category = "garden"`
	viaStore := func() (int, error) {
		page, err := st.Query(ctx, l, store.Query{Text: text}, &store.QueryOptions{PageSize: -1})
		if err != nil {
			return 0, err
		}
		return len(page.Items), nil
	}
	viaREST := func(size int32) func() (int, error) {
		return func() (int, error) { return countQuery(ctx, cc, text, azcosmos.NewPartitionKey(), size) }
	}
	// The REST API alone: the query request azcosmos sends, signed here,
	// its one page read and counted by its x-ms-item-count, not decoded.
	key, _ := base64.StdEncoding.DecodeString(emulatortest.Key)
	queryBody := fmt.Appendf(nil, `{"query":%q,"parameters":[]}`, text)
	client := srv.HTTPClient()
	viaRaw := func() (int, error) {
		req, err := http.NewRequest(http.MethodPost, srv.Endpoint+"dbs/bench/colls/q/docs", bytes.NewReader(queryBody))
		if err != nil {
			return 0, err
		}
		date := time.Now().UTC().Format(http.TimeFormat)
		for k, v := range map[string]string{
			"x-ms-date": date, "x-ms-version": "2020-11-05", "Content-Type": "application/query+json",
			"x-ms-documentdb-isquery": "True", "x-ms-documentdb-query-enablecrosspartition": "True", "x-ms-max-item-count": "-1",
			"Authorization": url.QueryEscape("type=master&ver=1.0&sig=" + signature(key, http.MethodPost, "docs", "dbs/bench/colls/q", date)),
		} {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("status %d, %v", resp.StatusCode, err)
		}
		return strconv.Atoi(resp.Header.Get("x-ms-item-count"))
	}
	cases := []struct {
		name string
		run  func() (int, error)
	}{
		{"store", viaStore},
		{"rest-raw", viaRaw},
		{"rest-all", viaREST(-1)},
		{"rest-pages-1000", viaREST(1000)},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			if n, err := tc.run(); err != nil || n != 20_000 { // warm: documents decoded, connections open
				b.Fatalf("%d results, %v", n, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			pprof.Do(ctx, pprof.Labels("side", "client"), func(context.Context) {
				for range b.N {
					if n, err := tc.run(); err != nil || n != 20_000 {
						b.Fatalf("%d results, %v", n, err)
					}
				}
			})
		})
	}
}
