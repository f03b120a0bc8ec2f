package emulator_test

// Hostile connections (issue 27, finding 7): slow bodies, oversized
// headers and requests net/http refuses before any handler runs, each
// answered in Cosmos DB's shape and none holding a connection.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator"
	"github.com/docshard/docshard/store/memstore"
)

// hangGuard bounds how long a test waits on a connection that misbehaves:
// far longer than any limit under test, so it only ends a failing test.
const hangGuard = 20 * time.Second

// serveLikeServe starts what docshard serve runs (the emulator behind an
// http.Server with its limits and Listener) on a loopback port, with the
// given body timeout, and returns its address.
func serveLikeServe(t *testing.T, bodyTimeout time.Duration) string {
	t.Helper()
	return startLikeServe(t, bodyTimeout, nil)
}

// serveLikeServeTLS starts what docshard serve --self-signed runs (the
// emulator behind an http.Server with its limits, over ListenerTLS) and
// returns its address and the pool that trusts its certificate.
func serveLikeServeTLS(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM, err := emulator.SelfSignedCertificate([]string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	return startLikeServe(t, 0, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), pool
}

func startLikeServe(t *testing.T, bodyTimeout time.Duration, config *tls.Config) string {
	t.Helper()
	emu, err := emulator.New(memstore.New(nil), &emulator.Options{BodyTimeout: bodyTimeout})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: emu, ReadHeaderTimeout: emulator.DefaultHeaderTimeout, MaxHeaderBytes: emulator.MaxHeaderBytes}
	served := emulator.Listener(ln)
	if config != nil {
		served = emulator.ListenerTLS(ln, config, &emulator.TLSOptions{Logf: t.Logf})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(served)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// signedHeader is the header of a request signed with the default key
// for a resource type and link.
func signedHeader(method, resType, link string) string {
	key, _ := base64.StdEncoding.DecodeString(emulator.DefaultKey)
	date := time.Now().UTC().Format(http.TimeFormat)
	auth := url.QueryEscape("type=master&ver=1.0&sig=" + signature(key, method, resType, link, date))
	return "x-ms-date: " + date + "\r\nx-ms-version: 2020-11-05\r\nAuthorization: " + auth + "\r\n"
}

// exchange writes raw to a new connection (in the background: the server
// may stop reading) and reads one response and what follows it.
func exchange(t *testing.T, addr, raw string) (*http.Response, []byte, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	return exchangeOn(t, conn, raw)
}

// exchangeTLS is exchange over TLS, negotiating HTTP/1.1 as clients
// without HTTP/2 do.
func exchangeTLS(t *testing.T, addr string, pool *x509.CertPool, raw string) (*http.Response, []byte, error) {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	require.NoError(t, err)
	require.Equal(t, "http/1.1", conn.ConnectionState().NegotiatedProtocol)
	return exchangeOn(t, conn, raw)
}

func exchangeOn(t *testing.T, conn net.Conn, raw string) (*http.Response, []byte, error) {
	t.Helper()
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(hangGuard)))
	go func() { _, _ = io.WriteString(conn, raw) }()
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_, after := br.ReadByte() // what follows the answer: the connection's end
	return resp, body, after
}

// requireCosmosError checks a Cosmos-shaped error and returns its code and
// message.
func requireCosmosError(t *testing.T, resp *http.Response, body []byte) (string, string) {
	t.Helper()
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.NotEmpty(t, resp.Header.Get("x-ms-activity-id"))
	var e struct{ Code, Message string }
	require.NoError(t, json.Unmarshal(body, &e), "an error body is JSON: %q", body)
	return e.Code, e.Message
}

// A body that trickles is cut off at the body timeout, whether the
// handler reads it (a signed create: 408) or answers without it (an
// unsigned request: 401); either way the connection is closed, where
// before a client held it as long as it trickled (100 slow bodies held
// for 30 s).
func TestSlowBodiesAreCutOff(t *testing.T) {
	addr := serveLikeServe(t, 50*time.Millisecond)
	cases := []struct {
		name   string
		header string
		status int
		code   string
	}{
		{"signed, read by the handler", signedHeader("POST", "dbs", ""), http.StatusRequestTimeout, "RequestTimeout"},
		{"unsigned, answered unread", "", http.StatusUnauthorized, "Unauthorized"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Content-Length promises 1000 bytes; 9 arrive, then nothing.
			raw := "POST /dbs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n" + tc.header + "\r\n" + `{"id":"a"`
			resp, body, after := exchange(t, addr, raw)
			require.Equal(t, tc.status, resp.StatusCode, "%s", body)
			code, msg := requireCosmosError(t, resp, body)
			assert.Equal(t, tc.code, code)
			if tc.status == http.StatusRequestTimeout {
				assert.Contains(t, msg, "--body-timeout")
			}
			assert.True(t, resp.Close, "the answer closes the connection")
			require.ErrorIs(t, after, io.EOF, "the server closed the connection; it did not wait for the rest of the body")
		})
	}
}

// A body that arrives in time is served, and the connection is kept for
// the next request: the deadline bounds the body only.
func TestBodiesInTimeAreServed(t *testing.T) {
	addr := serveLikeServe(t, time.Minute)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(hangGuard)))
	br := bufio.NewReader(conn)
	for i := range 2 {
		body := fmt.Sprintf(`{"id":"db%d"}`, i)
		_, err := fmt.Fprintf(conn, "POST /dbs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n%s\r\n%s", len(body), signedHeader("POST", "dbs", ""), body)
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", data)
		assert.False(t, resp.Close)
	}
}

// What net/http refuses before any handler runs is answered in Cosmos DB's
// shape too, over HTTP and over HTTPS: before, a 2 MB header got net/http's
// plain-text 431 (over HTTPS until ListenerTLS).
func TestNetHTTPRefusalsAreCosmosShaped(t *testing.T) {
	addr := serveLikeServe(t, 0)
	tlsAddr, pool := serveLikeServeTLS(t)
	cases := []struct {
		name, raw string
		status    int
		code      string
		message   string
	}{
		{"2 MB header", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge, "RequestHeaderFieldsTooLarge", "emulator.MaxHeaderBytes = 1048576"},
		{"malformed request line", "GARBAGE\r\n\r\n", http.StatusBadRequest, "BadRequest", "refused the request before reading it"},
		{"malformed header", "GET / HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", http.StatusBadRequest, "BadRequest", "400 Bad Request"},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", http.StatusBadRequest, "BadRequest", "missing required Host header"},
		{"unknown transfer encoding", "POST /dbs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", http.StatusNotImplemented, "NotImplemented", "Unsupported transfer encoding"},
		{"HTTP/3 request line", "GET / HTTP/3.0\r\nHost: x\r\n\r\n", http.StatusHTTPVersionNotSupported, "HttpVersionNotSupported", "unsupported protocol version"},
		{"unknown expectation", "GET / HTTP/1.1\r\nHost: x\r\nExpect: something\r\n\r\n", http.StatusExpectationFailed, "ExpectationFailed", "only 100-continue"},
		{"method not allowed", "DELETE / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + signedHeader("DELETE", "", "") + "\r\n", http.StatusMethodNotAllowed, "MethodNotAllowed", "DELETE is not allowed"},
	}
	for _, tc := range cases {
		for _, scheme := range []string{"http", "https"} {
			t.Run(scheme+"/"+tc.name, func(t *testing.T) {
				var resp *http.Response
				var body []byte
				if scheme == "https" {
					resp, body, _ = exchangeTLS(t, tlsAddr, pool, tc.raw)
				} else {
					resp, body, _ = exchange(t, addr, tc.raw)
				}
				require.Equal(t, tc.status, resp.StatusCode, "%s", body)
				code, msg := requireCosmosError(t, resp, body)
				assert.Equal(t, tc.code, code)
				assert.Contains(t, msg, tc.message)
			})
		}
	}
}

// Over HTTPS, clients that offer HTTP/2 (azcosmos and the other SDKs) get
// it, and those that offer HTTP/1.1 only get that; both are told the
// account's endpoint is https (the request knows it came over TLS). A
// plain-HTTP request to the HTTPS port gets a Cosmos-shaped 400.
func TestHTTPSServesBothProtocols(t *testing.T) {
	addr, pool := serveLikeServeTLS(t)
	for _, tc := range []struct {
		name      string
		h2        bool
		wantMajor int
	}{
		{"HTTP/2", true, 2},
		{"HTTP/1.1", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: tc.h2}
			if !tc.h2 {
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1 only
			}
			defer tr.CloseIdleConnections()
			req, err := http.NewRequest("GET", "https://"+addr+"/", nil)
			require.NoError(t, err)
			for line := range strings.SplitSeq(strings.TrimSpace(signedHeader("GET", "", "")), "\r\n") {
				name, value, _ := strings.Cut(line, ": ")
				req.Header.Set(name, value)
			}
			resp, err := (&http.Client{Transport: tr}).Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			assert.Equal(t, tc.wantMajor, resp.ProtoMajor)
			assert.Contains(t, string(body), `"databaseAccountEndpoint":"https://`+addr+`/"`)
		})
	}
	t.Run("plain HTTP to the HTTPS port", func(t *testing.T) {
		resp, body, after := exchange(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
		code, msg := requireCosmosError(t, resp, body)
		assert.Equal(t, "BadRequest", code)
		assert.Contains(t, msg, "https://")
		require.ErrorIs(t, after, io.EOF)
	})
}

// A good request passes through the Listener untouched.
func TestListenerPassesAnswersThrough(t *testing.T) {
	addr := serveLikeServe(t, 0)
	resp, body, _ := exchange(t, addr, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"+signedHeader("GET", "", "")+"\r\n")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"databaseAccountEndpoint"`)
}

// A query nested or chained far past the parser's limits is answered 400,
// Cosmos-shaped, naming the limit and where the query went past it; the
// parser stops there (query.TestDeepQueriesStayBoundedInTheParser).
func TestDeepQueriesAreBadRequests(t *testing.T) {
	srv := rawServer(t)
	for _, text := range []string{
		"SELECT * FROM c WHERE " + strings.Repeat("NOT ", 100_000) + "true",
		"SELECT * FROM c WHERE " + strings.Repeat("(", 100_000) + "true" + strings.Repeat(")", 100_000),
	} {
		body, err := json.Marshal(map[string]string{"query": text})
		require.NoError(t, err)
		code, h, answer := send(t, srv, rawRequest{method: "POST", path: docs, body: body, header: queryHeader(nil)})
		require.Equal(t, http.StatusBadRequest, code, "%.300s", answer)
		assert.Equal(t, "BadRequest", cosmosError(t, h, answer))
		assert.Contains(t, string(answer), "query: limit exceeded")
		assert.Contains(t, string(answer), "at byte")
	}
}

// A connection that never finishes its TLS handshake is closed at the
// handshake timeout, or when the listener closes (http.Server's Shutdown),
// whichever comes first; it holds nothing after.
func TestTLSHandshakesAreBounded(t *testing.T) {
	certPEM, keyPEM, err := emulator.SelfSignedCertificate([]string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	config := &tls.Config{Certificates: []tls.Certificate{cert}}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{
		{"timeout", 50 * time.Millisecond},
		{"listener closed", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			tl := emulator.ListenerTLS(ln, config, &emulator.TLSOptions{HandshakeTimeout: tc.timeout, Logf: t.Logf})
			defer tl.Close()
			conn, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(hangGuard)))
			if tc.timeout < 0 {
				accepted := make(chan error, 1)
				go func() {
					_, err := tl.Accept()
					accepted <- err
				}()
				require.NoError(t, tl.Close())
				require.ErrorIs(t, <-accepted, net.ErrClosed, "Accept ends when the listener closes")
			}
			_, err = conn.Read(make([]byte, 1))
			require.Error(t, err)
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server closed the connection in its handshake (EOF, or a reset if it was still queued): %v", err)
		})
	}
}

// Headers past emulator.MaxHeaderBytes over HTTP/2, as docshard serve
// --self-signed serves it (HTTP/1.1's 431 is Cosmos-shaped:
// TestNetHTTPRefusalsAreCosmosShaped). The server advertises its limit in
// SETTINGS_MAX_HEADER_LIST_SIZE and a conforming client (Go's, which
// azcosmos uses) refuses such a request itself, before sending it. A client
// that sends one anyway gets net/http's own HTML 431, which no listener can
// rewrite (see emulator.ListenerTLS): this test pins that, so that a Go
// release that lets a server answer it shows here.
func TestHTTP2HeadersPastTheLimit(t *testing.T) {
	addr, pool := serveLikeServeTLS(t)

	t.Run("Go's client refuses to send them", func(t *testing.T) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: hangGuard}
		// One small request first, so the client has the server's settings.
		resp, err := client.Get("https://" + addr + "/")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 2, resp.ProtoMajor)
		req, err := http.NewRequest("GET", "https://"+addr+"/", nil)
		require.NoError(t, err)
		req.Header.Set("X-Big", strings.Repeat("a", emulator.MaxHeaderBytes+4096))
		resp, err = client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		require.Error(t, err)
		assert.Contains(t, err.Error(), "larger than peer's advertised limit")
	})

	t.Run("a client that sends them gets net/http's 431", func(t *testing.T) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
		require.NoError(t, err)
		defer conn.Close()
		require.Equal(t, "h2", conn.ConnectionState().NegotiatedProtocol)
		require.NoError(t, conn.SetDeadline(time.Now().Add(hangGuard)))

		// HPACK (RFC 7541): :method GET, :scheme https, :path / from the
		// static table, then one literal field without indexing whose
		// size (name, value and 32) passes the advertised list size
		// (MaxHeaderBytes and 320, net/http's allowance) while its value
		// stays within the decoder's longest string (the same number), so
		// the server reads the whole block and answers it.
		block := []byte{0x82, 0x87, 0x84}
		value := emulator.MaxHeaderBytes + 320 - 16
		block = append(block, 0x00)
		block = hpackString(block, "x-big")
		block = hpackInt(block, value, 7, 0)
		block = append(block, bytes.Repeat([]byte("a"), value)...)

		var out bytes.Buffer
		out.WriteString("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
		writeFrame(&out, 0x4, 0, 0, nil) // SETTINGS, none
		_, err = conn.Write(out.Bytes())
		require.NoError(t, err)
		typ, flags, _, _ := readFrame(t, conn)
		require.Equal(t, [2]byte{0x4, 0}, [2]byte{typ, flags}, "the server's SETTINGS first")
		out.Reset()
		writeFrame(&out, 0x4, 0x1, 0, nil) // acknowledged
		const maxFrame = 16384             // the size every peer accepts
		for first := true; len(block) > 0; first = false {
			n := min(len(block), maxFrame)
			typ, flags := byte(0x9), byte(0) // CONTINUATION
			if first {
				typ, flags = 0x1, 0x1 // HEADERS, END_STREAM
			}
			if n == len(block) {
				flags |= 0x4 // END_HEADERS
			}
			writeFrame(&out, typ, flags, 1, block[:n])
			block = block[n:]
		}
		go func() { _, _ = conn.Write(out.Bytes()) }()

		// Read frames until stream 1 ends; keep its DATA.
		var body []byte
		for {
			typ, flags, stream, payload := readFrame(t, conn)
			require.NotEqual(t, byte(0x7), typ, "the server ended the connection (GOAWAY) instead of answering")
			if typ == 0x0 && stream == 1 { // DATA
				body = append(body, payload...)
			}
			if stream == 1 && flags&0x1 != 0 && (typ == 0x0 || typ == 0x1) {
				break
			}
		}
		assert.Contains(t, string(body), "HTTP Error 431", "net/http's own answer, status 431")
		assert.NotContains(t, string(body), `"code"`, "not Cosmos-shaped: see emulator.ListenerTLS")
	})
}

// readFrame reads one HTTP/2 frame: its type, flags, stream and payload.
func readFrame(t *testing.T, r io.Reader) (byte, byte, uint32, []byte) {
	t.Helper()
	var hdr [9]byte
	_, err := io.ReadFull(r, hdr[:])
	require.NoError(t, err, "a frame before the connection's end")
	payload := make([]byte, int(hdr[0])<<16|int(hdr[1])<<8|int(hdr[2]))
	_, err = io.ReadFull(r, payload)
	require.NoError(t, err)
	return hdr[3], hdr[4], binary.BigEndian.Uint32(hdr[5:]) & 0x7fffffff, payload
}

// writeFrame appends one HTTP/2 frame to w.
func writeFrame(w *bytes.Buffer, typ, flags byte, stream uint32, payload []byte) {
	n := len(payload)
	w.Write([]byte{byte(n >> 16), byte(n >> 8), byte(n), typ, flags})
	_ = binary.Write(w, binary.BigEndian, stream)
	w.Write(payload)
}

// hpackInt appends n as an HPACK integer with a prefix of bits bits, the
// rest of the first byte being first.
func hpackInt(dst []byte, n, bits int, first byte) []byte {
	limit := 1<<bits - 1
	if n < limit {
		return append(dst, first|byte(n))
	}
	dst = append(dst, first|byte(limit))
	n -= limit
	for n >= 128 {
		dst = append(dst, byte(n%128)|0x80)
		n /= 128
	}
	return append(dst, byte(n))
}

// hpackString appends s as an HPACK string literal without Huffman coding.
func hpackString(dst []byte, s string) []byte {
	return append(hpackInt(dst, len(s), 7, 0), s...)
}
