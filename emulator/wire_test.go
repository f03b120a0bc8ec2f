package emulator_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawExchange sends one request on a new connection and returns the
// status and the header lines as they came over the wire (names not
// canonicalised, as a client that keeps them sees them).
func rawExchange(t *testing.T, addr, method, path, header, body string) (int, []string, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(hangGuard)))
	req := method + " " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n" + header +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	_, err = io.WriteString(conn, req)
	require.NoError(t, err)
	raw, err := io.ReadAll(bufio.NewReader(conn))
	require.NoError(t, err)
	head, rest, ok := strings.Cut(string(raw), "\r\n\r\n")
	require.True(t, ok, "a response: %q", raw)
	lines := strings.Split(head, "\r\n")
	status, err := strconv.Atoi(strings.Fields(lines[0])[1])
	require.NoError(t, err)
	return status, lines[1:], rest
}

// headerNames are the names of raw header lines.
func headerNames(lines []string) map[string]string {
	out := map[string]string{}
	for _, l := range lines {
		name, v, _ := strings.Cut(l, ":")
		out[name] = strings.TrimSpace(v)
	}
	return out
}

// Over HTTP/1.1 Cosmos DB's own headers go out in lower case, as the
// service sends them (the Python SDK v3 looks them up so: with Go's
// canonical X-Ms-Continuation it stopped paging after the first page), and
// a doubled slash in the path ("//dbs", from the Python SDK v3 joining
// "https://host:8081/" with "/dbs") names what the single one does.
func TestWireHeaderNamesAndDoubledSlashes(t *testing.T) {
	addr := serveLikeServe(t, 0)
	pk := "x-ms-documentdb-partitionkey: [\"p\"]\r\n"
	steps := []struct {
		method, path, resType, link, header, body string
		want                                      int
		names                                     []string // lower-case names the answer has
	}{
		{"GET", "//", "", "", "", "", http.StatusOK, []string{"x-ms-activity-id", "x-ms-request-charge"}},
		{"POST", "//dbs", "dbs", "", "", `{"id":"db"}`, http.StatusCreated, nil},
		{"POST", "/dbs//db/colls", "colls", "dbs/db", "", `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`, http.StatusCreated, nil},
		{"POST", "//dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", pk, `{"id":"a","pk":"p"}`, http.StatusCreated, []string{"etag", "lsn", "x-ms-session-token"}},
		{"POST", "//dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", pk, `{"id":"b","pk":"p"}`, http.StatusCreated, nil},
		{"GET", "//dbs/db/colls/c/docs/a/", "docs", "dbs/db/colls/c/docs/a", pk, "", http.StatusOK, []string{"etag", "lsn", "x-ms-session-token"}},
		{"GET", "//dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", "x-ms-max-item-count: 1\r\n", "", http.StatusOK, []string{"x-ms-continuation", "x-ms-item-count"}},
		{"GET", "//dbs/db/colls/c/docs/missing", "docs", "dbs/db/colls/c/docs/missing", pk, "", http.StatusNotFound, []string{"x-ms-activity-id"}},
		{"GET", "//dbs/db", "dbs", "dbs/db", "", "", http.StatusOK, []string{"x-docshard-serve", "x-docshard-fence"}},
	}
	for _, s := range steps {
		status, lines, body := rawExchange(t, addr, s.method, s.path, signedHeader(s.method, s.resType, s.link)+s.header, s.body)
		require.Equal(t, s.want, status, "%s %s: %s", s.method, s.path, body)
		names := headerNames(lines)
		for _, n := range s.names {
			assert.Contains(t, names, n, "%s %s: %v", s.method, s.path, lines)
		}
		for n := range names {
			switch n {
			case "Content-Type", "Content-Length", "Connection", "Date":
			default:
				assert.Equal(t, strings.ToLower(n), n, "%s %s: a header name as the service sends it", s.method, s.path)
			}
		}
	}
}
