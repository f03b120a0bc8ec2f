package emulator_test

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator"
)

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
