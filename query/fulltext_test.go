package query

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFullTextContains: keywords match whole words without case, a keyword
// of several words matches them in sequence; All needs every keyword, Any
// one; a missing property matches nothing.
func TestFullTextContains(t *testing.T) {
	docs := []string{
		`{"id":"1","title":"Azure Cosmos DB Full Text Search"}`,
		`{"id":"2","title":"Not related: researching"}`,
		`{"id":"3","title":"full-text search, in text"}`,
		`{"id":"4"}`,
	}
	for _, tc := range []struct {
		where string
		want  []string
	}{
		{`FullTextContains(c.title, "search")`, []string{"1", "3"}},
		{`FullTextContains(c.title, "SEARCH")`, []string{"1", "3"}},
		{`FullTextContains(c.title, "text search")`, []string{"1", "3"}},
		{`FullTextContains(c.title, "search text")`, nil},
		{`FullTextContains(c.title, "")`, nil},
		{`FullTextContainsAll(c.title, "cosmos", "search")`, []string{"1"}},
		{`FullTextContainsAny(c.title, "related", "cosmos")`, []string{"1", "2"}},
		{`NOT FullTextContains(c.title, "search")`, []string{"2", "4"}},
	} {
		t.Run(tc.where, func(t *testing.T) {
			out, err := mustProg(t, "SELECT VALUE c.id FROM c WHERE "+tc.where).Execute(context.Background(), docsOf(t, docs...))
			require.NoError(t, err)
			var ids []string
			for _, r := range out {
				ids = append(ids, string(r[1:len(r)-1]))
			}
			assert.Equal(t, tc.want, ids)
		})
	}
}
