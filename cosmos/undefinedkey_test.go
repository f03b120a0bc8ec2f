package cosmos_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/store"
)

// keyRecorder records the partition-key header of every document request
// the SDK sends.
type keyRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	keys []string // "METHOD header" per request to .../docs
}

func (r *keyRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.Contains(req.URL.Path, "/docs") {
		r.mu.Lock()
		r.keys = append(r.keys, req.Method+" "+strings.Join(req.Header.Values("x-ms-documentdb-partitionkey"), "|"))
		r.mu.Unlock()
	}
	return r.base.RoundTrip(req)
}

func (r *keyRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys
	r.keys = nil
	return k
}

// TestUndefinedKeyOnTheWire checks what the backend sends for store.None
// (the header [{}], which azcosmos cannot build itself) and that nothing
// else is rewritten: null stays [null], a scope-less query sends no key.
func TestUndefinedKeyOnTheWire(t *testing.T) {
	srv := emulatortest.Shared(t)
	rec := &keyRecorder{base: srv.HTTPClient().Transport}
	ctx := emulatortest.Context(t)
	st, err := cosmos.New(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint}, HTTPClient: &http.Client{Transport: rec}})
	require.NoError(t, err)
	defer st.Close()
	l := fmt.Sprintf("dbs/undefinedkey/colls/c%d", time.Now().UnixNano())
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	rec.take()

	none := &store.WriteOptions{PartitionKey: store.None}
	cases := []struct {
		name string
		op   func(ctx context.Context) error
		want []string
	}{
		{"create without a key", func(ctx context.Context) error {
			_, err := st.Create(ctx, l, []byte(`{"id":"a","v":1}`), nil)
			return err
		}, []string{"POST [{}]"}},
		{"create with None", func(ctx context.Context) error {
			_, err := st.Create(ctx, l, []byte(`{"id":"b"}`), none)
			return err
		}, []string{"POST [{}]"}},
		{"create under null", func(ctx context.Context) error {
			_, err := st.Create(ctx, l, []byte(`{"id":"a","pk":null,"v":2}`), nil)
			return err
		}, []string{"POST [null]"}},
		{"read None", readsV(st, l, store.None, 1), []string{"GET [{}]"}},
		{"read null", readsV(st, l, store.Null, 2), []string{"GET [null]"}},
		{"read a string", func(ctx context.Context) error {
			_, err := st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "a"})
			assert.ErrorIs(t, err, store.ErrNotFound)
			return nil
		}, []string{`GET ["a"]`}},
		{"query scoped to None", func(ctx context.Context) error {
			p, err := st.Query(ctx, l, store.Query{Text: "SELECT VALUE c.id FROM c"}, &store.QueryOptions{PartitionKey: store.None})
			if err == nil {
				assert.ElementsMatch(t, []string{`"a"`, `"b"`}, rawStrings(p.Items))
			}
			return err
		}, []string{"POST [{}]"}},
		{"query across the container", func(ctx context.Context) error {
			_, err := st.Query(ctx, l, store.Query{Text: "SELECT VALUE c.id FROM c"}, nil)
			return err
		}, []string{"POST "}},
		{"replace None", func(ctx context.Context) error {
			_, err := st.Replace(ctx, l, "b", []byte(`{"id":"b","v":3}`), none)
			return err
		}, []string{"PUT [{}]"}},
		{"read without a key", func(ctx context.Context) error {
			_, err := st.Read(ctx, l, "b", nil) // found by a query across the container
			return err
		}, []string{"POST ", "GET [{}]"}},
		{"delete None", func(ctx context.Context) error { return st.Delete(ctx, l, "b", none) }, []string{"DELETE [{}]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.op(ctx))
			assert.Equal(t, tc.want, rec.take())
		})
	}
}

// readsV reads document "a" under key and checks its "v".
func readsV(st store.Store, l string, key any, v int) func(context.Context) error {
	return func(ctx context.Context) error {
		d, err := st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: key})
		if err != nil {
			return err
		}
		if want := fmt.Sprintf(`"v":%d`, v); !strings.Contains(string(d.Body), want) {
			return fmt.Errorf("read %s: %s lacks %s", key, d.Body, want)
		}
		return nil
	}
}

func rawStrings[T ~[]byte](items []T) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}
