package cosmos_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/store"
)

// TestReshardMarksThroughServe: the cosmos backend carries a reshard's
// marks to docshard serve (store.WriteOptions.Reshard on a copy and a
// clean-up delete, store.ChangeFeedOptions.HideReshard on a feed read),
// so the embedded store behind it leaves the copy out and keeps the moved
// document's version.
func TestReshardMarksThroughServe(t *testing.T) {
	ctx := emulatortest.Context(t)
	srv := emulatortest.Start(t, &emulatortest.Options{})
	st, err := emulatortest.Backend(ctx, srv.Endpoint)
	require.NoError(t, err)
	const src, dst = "dbs/marks/colls/src", "dbs/marks/colls/dst"
	for _, l := range []string{src, dst} {
		require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	}
	_, err = st.Create(ctx, src, []byte(`{"id":"a","pk":"p"}`), nil)
	require.NoError(t, err)
	mark := &store.WriteOptions{PartitionKey: "p", Reshard: true}
	_, err = st.Upsert(ctx, dst, []byte(`{"id":"a","pk":"p"}`), mark)
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, src, "a", mark))

	cf := st.(store.ChangeFeeder)
	ids := func(l string, hide bool) []string {
		page, err := cf.ReadChanges(ctx, l, &store.ChangeFeedOptions{HideReshard: hide})
		require.NoError(t, err)
		var out []string
		for _, it := range page.Items {
			var m struct{ ID string }
			require.NoError(t, json.Unmarshal(it, &m))
			out = append(out, m.ID)
		}
		return out
	}
	assert.Equal(t, []string{"a"}, ids(dst, false), "a plain feed shows the copy")
	assert.Empty(t, ids(dst, true), "the copy is hidden")
	assert.Empty(t, ids(src, false), "a plain feed drops the moved document")
	assert.Equal(t, []string{"a"}, ids(src, true), "the moved document keeps its version")
}
