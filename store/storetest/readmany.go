package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// SkipReadMany is the case key of store.ManyReader: documents read by
// (id, key) in the items' order, missing ones nil, malformed items
// refused. A backend that is not a ManyReader skips it by itself.
const SkipReadMany = "ReadMany"

func init() {
	cases = append(cases, testCase{SkipReadMany, (*suite).readMany})
}

func (s *suite) readMany(t *testing.T, st store.Store) {
	mr := capability[store.ManyReader](t, st, "store.ManyReader")
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 9) // d000..d008, keys p0, p1, p2 in turn
	items := []store.ItemRef{
		{ID: "d004", PartitionKey: "p1"},
		{ID: "d000", PartitionKey: "p0"},
		{ID: "d001", PartitionKey: "p0"}, // under another key: missing
		{ID: "nope", PartitionKey: "p0"},
		{ID: "d004", PartitionKey: "p1"}, // twice
		{ID: "d008"},                     // by id alone, as Read finds it
	}
	docs, err := mr.ReadMany(ctx, l, items)
	require.NoError(t, err)
	require.Len(t, docs, len(items), "one answer per item")
	for i, want := range []string{"d004", "d000", "", "", "d004", "d008"} {
		if want == "" {
			assert.Nil(t, docs[i], "item %d is missing", i)
			continue
		}
		require.NotNil(t, docs[i], "item %d", i)
		assert.Equal(t, want, docs[i].ID, "item %d", i)
		assert.Equal(t, mustRead(t, st, l, want, items[i].PartitionKey).ETag, docs[i].ETag, "item %d is the stored version", i)
	}

	docs, err = mr.ReadMany(ctx, l, nil)
	require.NoError(t, err)
	assert.Empty(t, docs)
	_, err = mr.ReadMany(ctx, l, []store.ItemRef{{ID: "d000", PartitionKey: "p0"}, {ID: "", PartitionKey: "p0"}})
	requireKind(t, err, store.ErrBadRequest, "an empty id")
	assert.Contains(t, err.Error(), "item 1", "the error names the item")
	_, err = mr.ReadMany(ctx, l+"-missing", items[:1])
	requireKind(t, err, store.ErrCollectionNotFound, "a missing collection")
}
