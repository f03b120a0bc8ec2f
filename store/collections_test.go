package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// TestEnsureCollectionsRule is the one conflict rule every creator of
// collections (router, managed, spillover, transition, shardstate, the
// command line) goes through.
func TestEnsureCollectionsRule(t *testing.T) {
	const l = "dbs/app/colls/c"
	for _, tc := range []struct {
		name     string
		existing *string // the path l exists with; nil: missing
		want     string
		keep     bool
		created  bool
		mismatch bool
		missing  bool
		fresh    bool // keep: the newest collection does not exist either (a new database)
	}{
		{name: "missing collection is created", want: "/userId", created: true},
		{name: "existing matching", existing: ptr("/userId"), want: "/userId"},
		{name: "same path, other spelling", existing: ptr(`/"userId"`), want: "/userId"},
		{name: "nested, other spelling", existing: ptr(`/a/"b"`), want: `/"a"/b`},
		{name: "default is /id", existing: ptr(""), want: "/id"},
		{name: "different path", existing: ptr("/tenant"), want: "/userId", mismatch: true},
		{name: "default against a path", existing: ptr(""), want: "/userId", mismatch: true},
		{name: "kept, existing matching", existing: ptr("/userId"), want: "/userId", keep: true},
		{name: "kept, different path", existing: ptr("/tenant"), want: "/userId", keep: true, mismatch: true},
		{name: "kept, missing", want: "/userId", keep: true, missing: true},
		{name: "kept, nothing exists: a new database", want: "/userId", keep: true, fresh: true, created: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := memstore.New(nil)
			if tc.existing != nil {
				require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: *tc.existing}))
			}
			w := store.Wanted{Spec: store.CollectionSpec{PartitionKeyPath: tc.want}}
			if tc.keep {
				// The collection written now (a spillover's newest) beside
				// the kept one; it exists unless the database is new.
				const newest = "dbs/app/colls/newest"
				if !tc.fresh {
					require.NoError(t, st.CreateCollection(ctx, newest, &store.CollectionSpec{PartitionKeyPath: tc.want}))
				}
				w.Create, w.Keep, w.KeepReason = []string{newest}, []string{l}, "restore it"
			} else {
				w.Create = []string{l}
			}
			created, err := store.EnsureCollections(ctx, st, w)
			switch {
			case tc.fresh:
				assert.Equal(t, []string{"dbs/app/colls/newest", l}, created)
			case tc.created:
				assert.Equal(t, []string{l}, created)
			default:
				assert.Empty(t, created)
			}
			var kpe *store.KeyPathError
			var mce *store.MissingCollectionError
			switch {
			case tc.mismatch:
				require.ErrorAs(t, err, &kpe)
				assert.ErrorIs(t, err, store.ErrKeyPathMismatch)
				found := *tc.existing
				if found == "" {
					found = "/id" // the store reports the default it applied
				}
				assert.Equal(t, store.KeyPathError{Collection: l, Want: tc.want, Found: found}, *kpe)
				assert.Contains(t, err.Error(), l)
			case tc.missing:
				require.ErrorAs(t, err, &mce)
				assert.ErrorIs(t, err, store.ErrNotFound)
				assert.Equal(t, l, mce.Collection)
				assert.Contains(t, err.Error(), "restore it")
			default:
				require.NoError(t, err)
			}
		})
	}
}

func TestSameKeyPath(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"/a/b", `/"a"/b`, true},
		{"", "/id", true},
		{"/a", "/a/b", false},
		{`/"a/b"`, "/a/b", false},
	} {
		same, err := store.SameKeyPath(tc.a, tc.b)
		require.NoError(t, err)
		assert.Equal(t, tc.same, same, "%s vs %s", tc.a, tc.b)
	}
	_, err := store.SameKeyPath("userId", "/userId")
	assert.ErrorIs(t, err, store.ErrBadRequest)
}

func ptr(s string) *string { return &s }
