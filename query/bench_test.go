package query

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/pikami/cosmium/parsers"
	"github.com/pikami/cosmium/parsers/nosql"
	memoryexecutor "github.com/pikami/cosmium/query_executors/memory_executor"
)

// The speed figures of docs/performance.md come from these benchmarks:
//
//	go test -run '^$' -bench 'Filter|OrderByTop' -benchmem ./query
//
// cosmium's executor runs the same string-equality filter over the same
// documents (decoded as it keeps them, map[string]any) in the same run.

const benchDocs = 100_000

var (
	benchOnce     sync.Once
	benchParsed   []Doc
	benchCosmium  []memoryexecutor.RowType
	benchDocBytes int
)

func benchData() {
	benchOnce.Do(func() {
		categories := []string{"books", "music", "games", "garden", "tools"}
		for i := 0; i < benchDocs; i++ {
			m := map[string]any{
				"id":       fmt.Sprintf("doc-%06d", i),
				"userId":   fmt.Sprintf("user-%05d", i%5000),
				"category": categories[i%len(categories)],
				"price":    float64(i%997) / 10,
				"stock":    i % 13,
				"title":    fmt.Sprintf("Item number %d of the catalogue", i),
				"tags":     []string{"t" + fmt.Sprint(i%7), "t" + fmt.Sprint(i%11)},
				"address":  map[string]any{"city": "City " + fmt.Sprint(i%50), "zip": fmt.Sprintf("%05d", i%99999)},
				"notes":    strings.Repeat("lorem ipsum dolor sit amet ", 24),
			}
			raw, _ := json.Marshal(m)
			benchDocBytes += len(raw)
			d, err := NewDoc(raw)
			if err != nil {
				panic(err)
			}
			benchParsed = append(benchParsed, d)
			var row map[string]any
			_ = json.Unmarshal(raw, &row)
			benchCosmium = append(benchCosmium, row)
		}
	})
}

const benchFilter = `SELECT c.id, c.title, c.price FROM c WHERE c.category = "garden"`

func BenchmarkFilter(b *testing.B) {
	benchData()
	b.Logf("%d documents, %d bytes on average", benchDocs, benchDocBytes/benchDocs)
	b.Run("docshard", func(b *testing.B) { benchExecute(b, benchFilter, benchDocs/5) })
	b.Run("cosmium", func(b *testing.B) {
		parsed, err := nosql.Parse("", []byte(benchFilter))
		if err != nil {
			b.Fatal(err)
		}
		stmt := parsed.(parsers.SelectStmt)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			out := memoryexecutor.ExecuteQuery(stmt, benchCosmium)
			if len(out) != benchDocs/5 {
				b.Fatalf("%d results", len(out))
			}
		}
		b.ReportMetric(float64(benchDocs)*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
	})
}

func BenchmarkOrderByTop(b *testing.B) {
	benchData()
	benchExecute(b, `SELECT TOP 100 c.id, c.price FROM c ORDER BY c.price DESC, c.id`, 100)
}

// benchExecute measures Execute of text over the benchmark's documents,
// which must give want results, and reports documents per second.
func benchExecute(b *testing.B, text string, want int) {
	prog, err := Prepare(text, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := prog.Execute(context.Background(), seqOf(benchParsed))
		if err != nil || len(out) != want {
			b.Fatalf("%d results, %v", len(out), err)
		}
	}
	b.ReportMetric(float64(benchDocs)*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}
