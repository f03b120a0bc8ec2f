package emulator_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// plainStore hides every optional capability of the store it wraps.
type plainStore struct{ store.Store }

// rawServer starts an in-memory server holding the database "raw" and its
// collection "c" keyed by /pk.
func rawServer(t *testing.T) *emulatortest.Server {
	t.Helper()
	return serverWith(t, "raw", `{"id":"c","partitionKey":{"paths":["/pk"]}}`)
}

// raiseFence raises a database's fence through the REST API and returns
// the answer's fence.
func raiseFence(t *testing.T, srv *emulatortest.Server, db string, epoch int) string {
	t.Helper()
	_, h, body := send(t, srv, rawRequest{method: "GET", path: "/" + db, header: map[string]string{emulator.HeaderRaiseFence: strconv.Itoa(epoch)}})
	require.NotEmpty(t, h.Get(emulator.HeaderFence), "%s", body)
	return h.Get(emulator.HeaderFence)
}

// TestFenceHeaders: docshard's fencing extension, written by hand. A
// database read says what the server offers and the fence; a read asking
// to raise it raises it (never down); a stamped write below the fence is
// 412 with code Fenced and the fence; unstamped writes pass.
func TestFenceHeaders(t *testing.T) {
	srv := rawServer(t)
	code, h, _ := send(t, srv, rawRequest{method: "GET", path: "/dbs/raw"})
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "batch,fence,query,reshard", h.Get(emulator.HeaderServe))
	assert.Equal(t, "0", h.Get(emulator.HeaderFence))
	code, h, _ = send(t, srv, rawRequest{method: "GET", path: "/dbs/nothing"})
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "batch,fence,query,reshard", h.Get(emulator.HeaderServe), "on a missing database too")
	assert.Equal(t, "0", h.Get(emulator.HeaderFence))

	assert.Equal(t, "5", raiseFence(t, srv, "dbs/raw", 5))
	assert.Equal(t, "5", raiseFence(t, srv, "dbs/raw", 2), "a fence never goes down")
	assert.Equal(t, "1", raiseFence(t, srv, "dbs/nothing", 1), "a database need not exist to be fenced")
	for _, bad := range []string{"x", "-1", "1.5"} {
		code, h, body := send(t, srv, rawRequest{method: "GET", path: "/dbs/raw", header: map[string]string{emulator.HeaderRaiseFence: bad}})
		assert.Equal(t, http.StatusBadRequest, code, "raise to %q", bad)
		cosmosError(t, h, body)
	}

	const d = "/dbs/raw/colls/c/docs"
	write := func(method, path, body, epoch string) (int, http.Header, []byte) {
		hdr := pkHeader(`["p"]`)
		if epoch != "" {
			hdr[emulator.HeaderEpoch] = epoch
		}
		if method == "PATCH" {
			body = `{"operations":[{"op":"set","path":"/v","value":1}]}`
		}
		return send(t, srv, rawRequest{method: method, path: path, body: []byte(body), header: hdr})
	}
	code, _, body := write("POST", d, `{"id":"a","pk":"p"}`, "")
	require.Equal(t, http.StatusCreated, code, "%s", body)
	writes := []struct{ method, path, body string }{
		{"POST", d, `{"id":"b","pk":"p"}`},
		{"PUT", d + "/a", `{"id":"a","pk":"p"}`},
		{"PATCH", d + "/a", ""},
		{"DELETE", d + "/a", ""},
	}
	for _, w := range writes {
		code, h, body := write(w.method, w.path, w.body, "4")
		require.Equal(t, http.StatusPreconditionFailed, code, "%s stamped 4: %s", w.method, body)
		assert.Equal(t, emulator.CodeFenced, cosmosError(t, h, body))
		assert.Equal(t, "5", h.Get(emulator.HeaderFence), "a refusal names the fence")
		code, _, body = write(w.method, w.path, w.body, "x")
		require.Equal(t, http.StatusBadRequest, code, "%s with a malformed epoch: %s", w.method, body)
	}
	for _, w := range writes {
		code, _, body := write(w.method, w.path, w.body, "5")
		require.Less(t, code, 300, "%s stamped 5: %s", w.method, body)
	}
	code, _, body = write("POST", d, `{"id":"c","pk":"p"}`, "0")
	require.Equal(t, http.StatusCreated, code, "epoch 0 is not fenced: %s", body)
}

// TestFenceOverOtherStores: over a store that is not a store.Fencer, a
// raise is answered 501 and database reads carry no fence.
func TestFenceOverOtherStores(t *testing.T) {
	st := &plainStore{Store: memstore.New(nil)}
	t.Cleanup(func() { st.Store.Close() })
	srv := emulatortest.Start(t, &emulatortest.Options{Store: st})
	code, h, _ := send(t, srv, rawRequest{method: "GET", path: "/dbs/x"})
	assert.Equal(t, http.StatusNotFound, code)
	assert.Empty(t, h.Get(emulator.HeaderFence))
	assert.Equal(t, "query", h.Get(emulator.HeaderServe), "only the query extension, which needs nothing of the store")
	code, _, body := send(t, srv, rawRequest{method: "GET", path: "/dbs/x", header: map[string]string{emulator.HeaderRaiseFence: "1"}})
	assert.Equal(t, http.StatusNotImplemented, code, "%s", body)
	assert.Contains(t, string(body), "fencing")
}

// TestFenceSurvivesRestart: a durable server's fences are there after a
// restart on the same directory.
func TestFenceSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	srv, err := emulatortest.New(&emulatortest.Options{Dir: dir})
	require.NoError(t, err)
	assert.Equal(t, "9", raiseFence(t, srv, "dbs/kept", 9))
	require.NoError(t, srv.Close())
	srv = emulatortest.Start(t, &emulatortest.Options{Dir: dir})
	_, h, _ := send(t, srv, rawRequest{method: "GET", path: "/dbs/kept"})
	assert.Equal(t, "9", h.Get(emulator.HeaderFence))
	assert.True(t, strings.Contains(h.Get(emulator.HeaderServe), "fence"))
}
