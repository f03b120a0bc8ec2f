package memstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// The reproducer of issue 17: ids "\ud800", "\udbff" and "\ufffd" were one
// document (decoding turned each lone surrogate into U+FFFD), and an upsert
// of one replaced another; partition keys likewise. Lone surrogates are
// refused now, naming the problem; "\ufffd" itself is a character and
// stays its own document.
func TestLoneSurrogates(t *testing.T) {
	ctx := context.Background()
	s := New(nil)
	const l = "dbs/s/colls/c"
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	_, err := s.Upsert(ctx, l, []byte(`{"id":"\ufffd","pk":"p","n":1}`), nil)
	require.NoError(t, err)
	cases := []struct{ name, body, msg string }{
		{"id high", `{"id":"\ud800","pk":"p","n":2}`, "lone surrogate"},
		{"id low", `{"id":"\udfff","pk":"p","n":2}`, "lone surrogate"},
		{"id high then text", `{"id":"\udbffx","pk":"p","n":2}`, "lone surrogate"},
		{"key", `{"id":"k","pk":"\ud800","n":2}`, "lone surrogate"},
		{"key reversed pair", `{"id":"k","pk":"\udc00\ud800","n":2}`, "lone surrogate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Upsert(ctx, l, []byte(tc.body), nil)
			require.ErrorIs(t, err, store.ErrBadRequest)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
	d, err := s.Read(ctx, l, "\ufffd", &store.ReadOptions{PartitionKey: "p"})
	require.NoError(t, err)
	assert.JSONEq(t, `1`, string(mustMember(t, d.Body, "n")), "nothing replaced it")
	_, err = s.Upsert(ctx, l, []byte(`{"id":"\ud83d\ude00","pk":"\ud83d\ude00"}`), nil)
	require.NoError(t, err, "a surrogate pair is one character")
	_, err = s.Read(ctx, l, "\xed\xa0\x80", &store.ReadOptions{PartitionKey: "p"})
	require.ErrorIs(t, err, store.ErrBadRequest, "an id that is not UTF-8 (a lone surrogate in WTF-8)")
}

func mustMember(t *testing.T, body []byte, name string) []byte {
	t.Helper()
	v, err := findMember(body, name)
	require.NoError(t, err)
	return v
}
