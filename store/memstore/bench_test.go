package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// The figures of the README come from these benchmarks:
//
//	go test -run '^$' -bench . -benchmem ./store/memstore

// doc1K returns a document of about 1 KB.
func doc1K(id string) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": id, "userId": "user-" + id, "category": []string{"books", "music", "games", "garden", "tools"}[len(id)%5],
		"price": 12.5, "tags": []string{"a", "b", "c"}, "notes": strings.Repeat("lorem ipsum dolor sit amet ", 33),
	})
	return b
}

func BenchmarkPointRead(b *testing.B) {
	s := New(nil)
	ctx := context.Background()
	l := "dbs/bench/colls/c"
	if err := s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 10000; i++ {
		if _, err := s.Create(ctx, l, doc1K(fmt.Sprint(i)), nil); err != nil {
			b.Fatal(err)
		}
	}
	opts := &store.ReadOptions{PartitionKey: "user-4242"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Read(ctx, l, "4242", opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCreateInMemory(b *testing.B) {
	s := New(nil)
	ctx := context.Background()
	l := "dbs/bench/colls/c"
	if err := s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}); err != nil {
		b.Fatal(err)
	}
	docs := make([][]byte, b.N)
	for i := range docs {
		docs[i] = doc1K(fmt.Sprint(i))
	}
	b.SetBytes(int64(len(docs[0])))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Create(ctx, l, docs[i], nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateDurable32 runs 32 concurrent writers of 1 KB documents on a
// durable store (fsync on, group commit); creates/s is the figure.
func BenchmarkCreateDurable32(b *testing.B) {
	s, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	l := "dbs/bench/colls/c"
	if err := s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.SetParallelism(16) // 16 × GOMAXPROCS(2) = 32 writers
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Create(ctx, l, doc1K(fmt.Sprint(n.Add(1))), nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// BenchmarkQuery100K runs a filtered query over 100,000 documents through
// the store, and the same program over the same decoded documents with the
// engine alone: the difference is what the store adds.
func BenchmarkQuery100K(b *testing.B) {
	s := New(nil)
	ctx := context.Background()
	l := "dbs/bench/colls/c"
	if err := s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100_000; i++ {
		if _, err := s.Create(ctx, l, doc1K(fmt.Sprint(i)), nil); err != nil {
			b.Fatal(err)
		}
	}
	q := store.Query{Text: `SELECT c.id, c.price FROM c WHERE c.category = "garden"`}
	// Warm: decode every document once, as a live store has.
	if _, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: -1}); err != nil {
		b.Fatal(err)
	}
	b.Run("store", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			page, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: -1})
			if err != nil || len(page.Items) == 0 {
				b.Fatalf("%v %d", err, len(page.Items))
			}
		}
	})
	b.Run("engine-alone", func(b *testing.B) {
		c, _ := s.collection("bench", l)
		var docs []query.Doc
		for _, e := range c.order {
			d, _ := e.decoded()
			docs = append(docs, d)
		}
		prog, err := query.Prepare(q.Text, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			out, err := prog.Execute(ctx, func(yield func(query.Doc) bool) {
				for _, d := range docs {
					if !yield(d) {
						return
					}
				}
			})
			if err != nil || len(out) == 0 {
				b.Fatal(err)
			}
		}
	})
}
