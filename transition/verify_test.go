package transition_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/spillover"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/transition"
)

// TestVerifySpillover: a document is in place in any collection its
// resolver reads its key from; a spillover reads every one of its
// collections, so documents in sealed collections are in place, and only
// one in a collection it does not name is misplaced (with Want the newest,
// where it would be written).
func TestVerifySpillover(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	defer st.Close()
	r, err := spillover.New([]string{db + "/colls/log0", db + "/colls/log1"},
		&spillover.Options{PartitionKey: resolver.MustKeyDef("/id"), CollectionPrefix: "log", MaxDocuments: 10})
	require.NoError(t, err)
	for _, l := range []string{"log0", "log1", "other"} {
		require.NoError(t, st.CreateCollection(ctx, db+"/colls/"+l, nil))
		_, err := st.Create(ctx, db+"/colls/"+l, []byte(`{"id":"in-`+l+`"}`), nil)
		require.NoError(t, err)
	}
	rep, err := transition.Verify(ctx, st, db, r)
	require.NoError(t, err)
	assert.Equal(t, int64(3), rep.Documents)
	assert.Empty(t, rep.Duplicates)
	require.Len(t, rep.Misplaced, 1)
	assert.Equal(t, transition.Finding{ID: "in-other", Key: `"in-other"`, Collection: db + "/colls/other", Want: db + "/colls/log1"}, rep.Misplaced[0])
}
