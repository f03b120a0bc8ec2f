package query

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProgramConcurrentUse: one compiled Program runs from many goroutines
// over the same shared Docs (as the store does) with identical answers and
// without changing the documents; run under -race.
func TestProgramConcurrentUse(t *testing.T) {
	var docs []Doc
	var before []string
	for i := range 300 {
		raw := fmt.Sprintf(`{"id":"d%03d","n":%d,"s":"name %d","tags":["t%d","u"],"o":{"x":%d}}`, i, i%17, i%23, i%5, i%3)
		d, err := NewDoc([]byte(raw))
		require.NoError(t, err)
		docs = append(docs, d)
		before = append(before, canonical(d.Value()))
	}
	queries := []string{
		"SELECT c.id, c.n FROM c WHERE c.s LIKE 'name 1%' AND REGEXMATCH(c.id, 'd0[0-4]')",
		"SELECT TOP 7 VALUE c.id FROM c ORDER BY c.n DESC, c.id",
		"SELECT c.o.x AS x, COUNT(1) AS n, AVG(c.n) AS avg FROM c GROUP BY c.o.x",
		"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags",
		"SELECT c.id, ARRAY(SELECT VALUE UPPER(t) FROM t IN c.tags) AS up FROM c WHERE EXISTS(SELECT VALUE 1 FROM t IN c.tags WHERE t = 't3')",
		"SELECT * FROM c WHERE c.n = 3",
	}
	for _, q := range queries {
		prog := mustProg(t, q)
		want, err := prog.Execute(context.Background(), seqOf(docs))
		require.NoError(t, err)
		wantJSON, _ := json.Marshal(want)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					got, err := prog.Execute(context.Background(), seqOf(docs))
					if err != nil {
						errs <- err
						return
					}
					if b, _ := json.Marshal(got); string(b) != string(wantJSON) {
						errs <- fmt.Errorf("%s: a concurrent run answered %s, want %s", q, b, wantJSON)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			assert.NoError(t, err)
		}
	}
	for i, d := range docs {
		assert.Equal(t, before[i], canonical(d.Value()), "document %d was changed by a query", i)
	}
}

// TestReadsClockOnlyReads: readsClock inspects a tree that several
// goroutines may share (a store's prepared query), so it must not write
// it; under -race, concurrent calls on one tree found it writing every
// node back.
func TestReadsClockOnlyReads(t *testing.T) {
	for _, tc := range []struct {
		text  string
		clock bool
	}{
		{"SELECT * FROM c WHERE c.ts < GetCurrentTimestamp()", true},
		{"SELECT c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t > GetCurrentTicks())", true},
		{"SELECT c.id, c.n + 1 AS m FROM c JOIN t IN c.tags WHERE c.n > 2 ORDER BY c.id", false},
	} {
		t.Run(tc.text, func(t *testing.T) {
			q, err := Parse(tc.text)
			require.NoError(t, err)
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					assert.Equal(t, tc.clock, readsClock(q))
				}()
			}
			wg.Wait()
		})
	}
}
