package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkQuery200K times docshard query, the whole process, on a durable
// embedded store of 200,000 documents of about 1 KB in 4 collections (the
// issue #20 targets: a keyed query under 0.5 s of wall time, a full COUNT
// under 1 s). Each run opens the store read-only, so it pays for loading
// it. cpu-ms/op is the process's user and system time. DOCSHARD_BENCH_BIN
// names another docshard binary (an older build) whose queries are timed
// on the same store too, as sub-benchmarks named other-…, for a
// comparison in one run.
//
//	go test -run '^$' -bench Query200K -benchtime 5x -count 3 ./cmd/docshard
func BenchmarkQuery200K(b *testing.B) {
	bin := docshardBinary(b)
	bins := map[string]string{"": bin}
	if other := os.Getenv("DOCSHARD_BENCH_BIN"); other != "" {
		bins["other-"] = other
	}
	dir := b.TempDir()
	colls := "dbs/app/colls/u0, dbs/app/colls/u1, dbs/app/colls/u2, dbs/app/colls/u3"
	cfg := writeFile(b, dir, "app.yaml", "store: {kind: embedded, path: data}\ndatabases:\n  - link: dbs/app\n    resolver: {kind: hash, partitionKey: /userId, collections: ["+colls+"]}\n")
	docs := filepath.Join(dir, "docs.jsonl")
	f, err := os.Create(docs)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	notes := strings.Repeat("lorem ipsum dolor sit amet ", 33)
	for i := range 200_000 {
		fmt.Fprintf(w, `{"id":"%d","userId":"user-%d","n":%d,"city":"%s","price":%d.5,"tags":["a","b","c"],"notes":"%s"}`+"\n",
			i, i%5000, i, []string{"Oslo", "Lima", "Pune", "Kyiv", "Quito"}[i%5], i%100, notes)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command(bin, "load", "-c", cfg, docs).CombinedOutput(); err != nil {
		b.Fatalf("load: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name, want string
		args       []string
	}{
		{"keyed", "40", []string{"--key", "user-42", `SELECT VALUE COUNT(1) FROM c WHERE c.userId = "user-42"`}},
		{"count", "200000", []string{`SELECT VALUE COUNT(1) FROM c`}},
		{"filter", "40000", []string{`SELECT VALUE COUNT(1) FROM c WHERE c.city = "Lima"`}},
	} {
		for prefix, bin := range bins {
			b.Run(prefix+c.name, func(b *testing.B) {
				var cpu time.Duration
				for b.Loop() {
					cmd := exec.Command(bin, append([]string{"query", "-c", cfg}, c.args...)...)
					out, err := cmd.Output()
					if err != nil || strings.TrimSpace(string(out)) != c.want {
						b.Fatalf("%v: %s", err, out)
					}
					cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				}
				b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
			})
		}
	}
}
