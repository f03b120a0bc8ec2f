package query_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/queryhook"
	"github.com/docshard/docshard/query"
)

// TestReadsClockOnlyReads: ReadsClock inspects a tree that several
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
			q, err := query.Parse(tc.text)
			require.NoError(t, err)
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					assert.Equal(t, tc.clock, queryhook.ReadsClock(q))
				}()
			}
			wg.Wait()
		})
	}
}
