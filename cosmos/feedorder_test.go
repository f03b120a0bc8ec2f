package cosmos_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/store"
)

// A read feed through a server that pages by its own size, ignoring the
// one asked for, and whose _rids do not sort as its pages run, resumed by
// a store that no longer holds the page (another process), while the walk
// deletes what it has read: every document is returned exactly once, or
// the walk is told to start again; none is silently skipped. Cosmos DB
// documents no order of _rid (the REST reference and the SDKs call it a
// unique, hierarchical, system-generated id), so the resume must not
// depend on one. The server is docshard serve behind a proxy that pages
// every query by 50 and gives each document a _rid that sorts in reverse
// creation order. Before the fix, a resume took the re-read page in _rid
// order and skipped what sorted before the last _rid returned, which
// included documents pulled into the page by the deletions.
func TestReadFeedResumeNeedsNoRIDOrder(t *testing.T) {
	srv := emulatortest.Start(t, nil)
	target, err := url.Parse(srv.Endpoint)
	require.NoError(t, err)
	var proxy *httptest.Server
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		req := resp.Request
		isQuery := isQueryRequest(req)
		account := req.Method == http.MethodGet && req.URL.Path == "/"
		if !isQuery && !account || resp.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if account { // point the SDK back at the proxy
			body = []byte(strings.ReplaceAll(string(body), strings.TrimSuffix(srv.Endpoint, "/"), strings.TrimSuffix(proxy.URL, "/")))
		} else {
			var page map[string]any
			if err := json.Unmarshal(body, &page); err != nil {
				return err
			}
			docs, _ := page["Documents"].([]any)
			for _, d := range docs {
				if m, ok := d.(map[string]any); ok {
					if n, ok := m["n"].(float64); ok {
						m["_rid"] = fmt.Sprintf("r%06d", 999999-int(n)) // reverse creation order
					}
				}
			}
			if body, err = json.Marshal(page); err != nil {
				return err
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isQueryRequest(r) {
			r.Header.Set("x-ms-max-item-count", "50") // its own page size
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	ctx := emulatortest.Context(t)
	open := func() *cosmos.Store { // a store holding no page: another process
		s, err := cosmos.New(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: proxy.URL + "/", Key: emulatortest.Key}})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	const l, n = "dbs/feedorder/colls/walk", 200
	st := open()
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	for i := range n {
		_, err := st.Create(ctx, l, fmt.Appendf(nil, `{"id":"d%03d","pk":"k%d","n":%d}`, i, i%7, i), nil)
		require.NoError(t, err)
	}

	seen := map[string]int{}
	opts := &store.FeedOptions{PageSize: 10}
	restarts := 0
	for i := 0; ; i++ {
		require.Less(t, i, 2000, "the walk ends")
		page, err := open().ReadFeed(ctx, l, opts)
		if err != nil {
			var se *store.Error
			require.True(t, errors.As(err, &se) && errors.Is(err, store.ErrBadRequest), "%v", err)
			require.Contains(t, err.Error(), "from its first page")
			restarts++
			opts.Continuation = ""
			continue
		}
		for _, raw := range page.Items {
			var doc struct{ ID, PK string }
			require.NoError(t, json.Unmarshal(raw, &doc))
			seen[doc.ID]++
			require.NoError(t, st.Delete(ctx, l, doc.ID, &store.WriteOptions{PartitionKey: doc.PK}))
		}
		if page.Continuation == "" {
			break
		}
		opts.Continuation = page.Continuation
	}
	var skipped, twice []string
	for i := range n {
		id := fmt.Sprintf("d%03d", i)
		switch {
		case seen[id] > 1:
			twice = append(twice, id)
		case seen[id] == 0:
			skipped = append(skipped, id)
		}
	}
	t.Logf("%d restarts", restarts)
	assert.Empty(t, twice, "documents returned twice")
	assert.Empty(t, skipped, "documents never returned, of %d, none deleted before it was read", n)
}

// isQueryRequest reports whether r is a query of documents (azcosmos sends
// them with Content-Type application/query+json).
func isQueryRequest(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/docs") && strings.HasPrefix(r.Header.Get("Content-Type"), "application/query+json")
}
