//go:build !windows

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/proctest"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

func TestServeUsage(t *testing.T) {
	dir := t.TempDir()
	cert := writeFile(t, dir, "cert.pem", "not a certificate")
	cases := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"no dir", "", []string{"serve"}, "--dir is required"},
		{"bad addr", "", []string{"serve", "--dir", dir, "--addr", "8081"}, `--addr "8081": want HOST:PORT`},
		{"not loopback", "", []string{"serve", "--dir", dir, "--addr", "0.0.0.0:0"}, "not a loopback address"},
		{"cert without key", "", []string{"serve", "--dir", dir, "--tls-cert", cert}, "--tls-cert and --tls-key go together"},
		{"cert and self-signed", "", []string{"serve", "--dir", dir, "--tls-cert", cert, "--tls-key", cert, "--self-signed"}, "not both"},
		{"bad certificate", "", []string{"serve", "--dir", dir, "--tls-cert", cert, "--tls-key", cert}, "--tls-cert/--tls-key"},
		{"unknown flag", "", []string{"serve", "--dir", dir, "--port", "1"}, "unknown flag: --port"},
		{"arguments", "", []string{"serve", "--dir", dir, "extra"}, "takes no arguments"},
		{"bad key", "not base64!", []string{"serve", "--dir", dir}, "DOCSHARD_SERVE_KEY is not base64"},
		{"negative body timeout", "", []string{"serve", "--dir", dir, "--body-timeout", "-1s"}, "--body-timeout: want 0 to 1h0m0s"},
		{"header timeout past an hour", "", []string{"serve", "--dir", dir, "--header-timeout", "2h"}, "--header-timeout: want 0 to 1h0m0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(ServeKeyEnv, tc.env)
			code, out, errOut := runCLI(t, "", tc.args...)
			assert.Equal(t, 2, code, "a usage error exits 2")
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		})
	}
}

// docshardBinary builds the command once per test binary.
func docshardBinary(t testing.TB) string {
	t.Helper()
	return proctest.Build(t, "github.com/docshard/docshard/cmd/docshard")
}

// lockedBuffer collects a process's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serving is a docshard serve process.
type serving struct {
	cmd      *exec.Cmd
	endpoint string
	stderr   *lockedBuffer
	exited   chan struct{}
	err      error // Wait's, once exited is closed
}

// startServe runs the binary with args (and env) and reads the endpoint
// from the first line of its stdout.
func startServe(t *testing.T, env []string, args ...string) *serving {
	t.Helper()
	s := &serving{cmd: exec.Command(docshardBinary(t), args...), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stderr = s.stderr
	stdout, err := s.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
			t.Errorf("serve printed more on stdout: %q", sc.Text())
		}
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
	select {
	case line, ok := <-lines:
		require.True(t, ok, "serve printed nothing; stderr: %s", s.stderr.String())
		s.endpoint = line
	case <-time.After(30 * time.Second):
		t.Fatalf("serve printed no endpoint within 30s; stderr: %s", s.stderr.String())
	}
	return s
}

// stop signals the process and returns its exit code.
func (s *serving) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(sig))
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop within 60s of %v; stderr: %s", sig, s.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(s.err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, s.err)
	return 0
}

// TestServeBinary runs docshard serve as a user would: the endpoint alone
// on stdout's first line, other processes writing through the cosmos
// backend with no key, a second serve on the same directory refused, and
// SIGTERM under writes: exit 0, and every acknowledged write in the store;
// over HTTP and over HTTPS (HTTP/2).
func TestServeBinary(t *testing.T) {
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) { testServeBinary(t, scheme) })
	}
}

func testServeBinary(t *testing.T, scheme string) {
	dir := t.TempDir()
	args := []string{"serve", "--dir", dir, "--addr", "127.0.0.1:0"}
	if scheme == "https" {
		args = append(args, "--self-signed")
	}
	s := startServe(t, nil, args...)
	require.Regexp(t, `^`+scheme+`://127\.0\.0\.1:\d+/$`, s.endpoint)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := &cosmos.Options{Account: cosmos.Account{Endpoint: s.endpoint}}
	if scheme == "https" {
		// Trusting the certificate, over HTTP/2 as the SDKs negotiate it.
		certPath := filepath.Join(dir, serveCertFile)
		pem, err := os.ReadFile(certPath)
		require.NoError(t, err)
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(pem))
		opts.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
		t.Setenv(CAEnv, certPath)
	}
	st, err := cosmos.New(ctx, opts)
	require.NoError(t, err, "a loopback endpoint needs no key")
	const coll = "dbs/app/colls/c"
	require.NoError(t, st.CreateCollection(ctx, coll, &store.CollectionSpec{PartitionKeyPath: "/pk"}))

	// The command line, as another process, through the same server.
	cfg := writeFile(t, t.TempDir(), "c.yaml", fmt.Sprintf(`
store: {kind: cosmos, endpoint: %q}
databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /pk, collections: [%s]}
`, s.endpoint, coll))
	t.Setenv("DOCSHARD_STORE_KEY", "")
	code, out, errOut := runCLI(t, `{"id":"cli","pk":"x","n":-1}`+"\n", "load", "-c", cfg)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "1 documents loaded")

	began := time.Now()
	second, err := exec.Command(docshardBinary(t), "serve", "--dir", dir, "--addr", "127.0.0.1:0").CombinedOutput()
	took := time.Since(began)
	require.Error(t, err, "a second serve on the same directory fails")
	assert.Equal(t, fmt.Sprintf("docshard: serve: --dir %[1]s is in use: %[2]s is held by another process (another docshard serve, or a command with store.path %[1]s); stop it, or serve another --dir\n",
		dir, filepath.Join(dir, "docshard.db")), string(second), "one line, no trace")
	assert.Less(t, took, 2*time.Second, "at once, not after the store's 5 s lock timeout")

	// A port in use: the message names --addr and the way out, and nothing
	// is created in the new directory.
	fresh := filepath.Join(t.TempDir(), "fresh")
	addr := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s.endpoint, "https://"), "http://"), "/")
	third, err := exec.Command(docshardBinary(t), "serve", "--dir", fresh, "--addr", addr).CombinedOutput()
	require.Error(t, err, "the port is taken")
	assert.Contains(t, string(third), "--addr "+addr+" is in use")
	assert.Contains(t, string(third), ":0 picks a free port")
	_, statErr := os.Stat(filepath.Join(fresh, "docshard.db"))
	assert.True(t, errors.Is(statErr, os.ErrNotExist), "no store file created: %v", statErr)

	var acked sync.Map // id -> n
	var count atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				_, err := st.Create(ctx, coll, []byte(fmt.Sprintf(`{"id":%q,"pk":"w%d","n":%d}`, id, w, i)), nil)
				if err != nil {
					return // the server stopped
				}
				acked.Store(id, i)
				count.Add(1)
			}
		})
	}
	for count.Load() < 200 {
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "SIGTERM exits 0; stderr: %s", s.stderr.String())
	wg.Wait()
	assert.Contains(t, s.stderr.String(), "stopped; the store is closed")
	assert.NotContains(t, s.stderr.String(), "goroutine")

	ms, err := memstore.Open(dir, nil)
	require.NoError(t, err, "the store was closed")
	defer ms.Close()
	n := 0
	acked.Range(func(k, v any) bool {
		id := k.(string)
		d, err := ms.Read(ctx, coll, id, &store.ReadOptions{PartitionKey: strings.Split(id, "-")[0]})
		if assert.NoError(t, err, "acknowledged write %s is in the store", id) {
			assert.Contains(t, string(d.Body), fmt.Sprintf(`"n":%d`, v.(int)))
		}
		n++
		return true
	})
	t.Logf("%d acknowledged writes, all in the store", n)
	_, err = ms.Read(ctx, coll, "cli", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err)
	info, err := ms.CollectionInfo(ctx, coll)
	require.NoError(t, err)
	assert.EqualValues(t, n+1, info.Documents, "no write was applied without its answer reaching the client: requests in flight finished")
	catalog, err := os.ReadFile(filepath.Join(dir, "serve-databases.json"))
	require.NoError(t, err)
	assert.Contains(t, string(catalog), `"app"`, "the database is in the catalog")
}

// TestServeHTTPSAndKey: --self-signed serves HTTPS with a certificate kept
// in the directory, DOCSHARD_SERVE_KEY replaces the emulator key, and
// SIGINT stops it too.
func TestServeHTTPSAndKey(t *testing.T) {
	dir := t.TempDir()
	key := base64.StdEncoding.EncodeToString([]byte("the key of TestServeHTTPSAndKey"))
	s := startServe(t, []string{ServeKeyEnv + "=" + key}, "serve", "--dir", dir, "--addr", "127.0.0.1:0", "--self-signed")
	require.Regexp(t, `^https://127\.0\.0\.1:\d+/$`, s.endpoint)
	certPath := filepath.Join(dir, serveCertFile)
	assert.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), certPath) }, 10*time.Second, 10*time.Millisecond,
		"stderr names the certificate to trust")

	// HTTP/2 for clients that offer it; HTTP/1.1 for those that do not,
	// with net/http's own refusals Cosmos-shaped over TLS too.
	pem, err := os.ReadFile(certPath)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	hostPort := strings.TrimSuffix(strings.TrimPrefix(s.endpoint, "https://"), "/")
	h2, err := tls.Dial("tcp", hostPort, &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}})
	require.NoError(t, err)
	assert.Equal(t, "h2", h2.ConnectionState().NegotiatedProtocol)
	h2.Close()
	h1, err := tls.Dial("tcp", hostPort, &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	require.NoError(t, err)
	defer h1.Close()
	require.NoError(t, h1.SetDeadline(time.Now().Add(time.Minute)))
	go func() {
		_, _ = fmt.Fprintf(h1, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 2<<20))
	}()
	resp, err := http.ReadResponse(bufio.NewReader(h1), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), "Cosmos-shaped over HTTPS")
	resp.Body.Close()

	cfg := writeFile(t, t.TempDir(), "c.yaml", fmt.Sprintf(`
store: {kind: cosmos, endpoint: %q}
databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /pk, collections: [dbs/app/colls/a, dbs/app/colls/b]}
`, s.endpoint))
	t.Setenv(CAEnv, certPath)
	t.Setenv("DOCSHARD_STORE_KEY", "")
	code, _, errOut := runCLI(t, "", "query", "-c", cfg, "SELECT 1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "rejected the credentials", "the emulator key is not this server's")
	t.Setenv("DOCSHARD_STORE_KEY", key)
	code, out, errOut := runCLI(t, `{"id":"1","pk":"x","n":5}`+"\n", "load", "-c", cfg)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "1 documents loaded")
	code, out, errOut = runCLI(t, "", "query", "-c", cfg, "SELECT VALUE c.n FROM c")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "5\n", out)
	assert.Equal(t, 0, s.stop(t, syscall.SIGINT))

	// Restarted, it keeps the certificate clients trust, and the data.
	before, err := os.ReadFile(certPath)
	require.NoError(t, err)
	s = startServe(t, []string{ServeKeyEnv + "=" + key}, "serve", "--dir", dir, "--addr", "127.0.0.1:0", "--self-signed")
	after, err := os.ReadFile(certPath)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	cfg = writeFile(t, t.TempDir(), "c.yaml", fmt.Sprintf(`
store: {kind: cosmos, endpoint: %q}
databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /pk, collections: [dbs/app/colls/a, dbs/app/colls/b]}
`, s.endpoint))
	code, out, errOut = runCLI(t, "", "query", "-c", cfg, "SELECT VALUE c.n FROM c")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "5\n", out)
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM))
}
