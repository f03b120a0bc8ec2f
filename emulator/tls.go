package emulator

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/docshard/docshard/internal/opt"
)

// SelfSignedCertificate makes a self-signed TLS certificate (ECDSA P-256)
// for the given host names and IP addresses, valid from an hour ago for
// validFor, and returns the certificate and its private key in PEM.
// Clients trust it by adding the certificate to their roots (for docshard,
// DOCSHARD_COSMOS_CA). It costs one key generation, about a millisecond.
func SelfSignedCertificate(hosts []string, validFor time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("emulator: generating a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("emulator: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "docshard serve", Organization: []string{"docshard"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validFor),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("emulator: making a certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("emulator: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// TLSOptions configure ListenerTLS. The zero value is docshard serve's.
type TLSOptions struct {
	// HandshakeTimeout bounds each connection's TLS handshake, as
	// http.Server bounds it by ReadHeaderTimeout when it does the
	// handshake itself. 0 means DefaultHeaderTimeout; negative, no limit.
	HandshakeTimeout time.Duration
	// Logf reports each handshake that failed, a line each, as
	// http.Server's ErrorLog did. Nil discards them.
	Logf func(format string, args ...any)
}

// ListenerTLS serves HTTPS on ln to an http.Server (Serve, not ServeTLS):
// it accepts the TCP connections, completes each TLS handshake with config
// (in the connection's own goroutine, within TLSOptions.HandshakeTimeout),
// and hands the server the connection according to the protocol the
// client chose. An HTTP/2 connection is handed over as the *tls.Conn
// itself, so the server serves HTTP/2 as ServeTLS would (Serve enables it
// when http.Server.TLSConfig is nil or offers "h2"). An HTTP/1.x one is
// handed over through Listener's rewriting, so that net/http's own
// refusals (431, 400, 501, 505, 417) are Cosmos-shaped over HTTPS as
// over HTTP; it keeps its TLS state (http.Request.TLS is set).
//
// Over HTTP/2 a header list past http.Server.MaxHeaderBytes (and the 320
// bytes net/http adds) cannot be answered in Cosmos DB's shape, and stays
// net/http's HTML 431: its HTTP/2 server runs a fixed handler for it in
// place of the Server's (http2handleHeaderListTooLong in net/http's
// h2_bundle.go, Go 1.26; http.HTTP2Config has no setting for it), and its
// answer leaves HPACK-compressed, so a connection could only rewrite it by
// decoding and re-encoding every header block of the connection. A larger
// header list, in CONTINUATION frames past the limit, ends the connection
// (GOAWAY) unanswered. The limit is advertised in
// SETTINGS_MAX_HEADER_LIST_SIZE, and conforming clients (Go's, so azcosmos)
// refuse such a request before sending it (TestHTTP2HeadersPastTheLimit).
// A
// plain-HTTP request to the HTTPS port is answered with a Cosmos-shaped
// 400 naming https://.
//
// config must hold a certificate; NextProtos defaults to "h2" and
// "http/1.1". Closing the listener (http.Server.Shutdown and Close do)
// closes ln and every connection still in its handshake. The cost is
// what ServeTLS's handshakes cost, plus a goroutine switch per connection.
func ListenerTLS(ln net.Listener, config *tls.Config, opts *TLSOptions) net.Listener {
	o := opt.Of(opts)
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = DefaultHeaderTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	config = config.Clone()
	if len(config.NextProtos) == 0 {
		config.NextProtos = []string{"h2", "http/1.1"}
	}
	l := &tlsListener{
		Listener:  ln,
		config:    config,
		opts:      o,
		conns:     make(chan net.Conn),
		errs:      make(chan error),
		failed:    make(chan struct{}),
		done:      make(chan struct{}),
		handshake: map[net.Conn]struct{}{},
	}
	go l.acceptLoop()
	return l
}

// tlsListener is ListenerTLS's listener: acceptLoop accepts, a goroutine
// per connection shakes hands, Accept hands over what is ready.
type tlsListener struct {
	net.Listener
	config *tls.Config
	opts   TLSOptions
	conns  chan net.Conn // handshakes done
	errs   chan error    // ln's temporary Accept errors, one per Accept call
	failed chan struct{} // closed when ln failed for good, with err
	err    error
	done   chan struct{} // closed by Close

	closeOnce sync.Once
	mu        sync.Mutex
	handshake map[net.Conn]struct{} // connections in their handshake; nil once closed
}

func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.failed:
		return nil, l.err
	case <-l.done:
		return nil, fmt.Errorf("emulator: %w", net.ErrClosed)
	}
}

// Close stops accepting, closes ln and ends the handshakes in progress.
func (l *tlsListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.Listener.Close()
		l.mu.Lock()
		for c := range l.handshake {
			c.Close()
		}
		l.handshake = nil
		l.mu.Unlock()
	})
	return err
}

// acceptLoop accepts until ln fails for good (closed, or an error that is
// not temporary: every Accept returns it from then on). A temporary error
// (too many open files) goes to one Accept call, so it is retried at
// http.Server's pace.
func (l *tlsListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || !isTemporary(err) {
				l.err = err
				close(l.failed)
				return
			}
			select {
			case l.errs <- err:
				continue
			case <-l.done:
				return
			}
		}
		l.mu.Lock()
		if l.handshake == nil { // closed
			l.mu.Unlock()
			c.Close()
			return
		}
		l.handshake[c] = struct{}{}
		l.mu.Unlock()
		go l.serveHandshake(c)
	}
}

// isTemporary reports an accept error worth retrying (net/http's own
// test: the error says it is temporary).
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// serveHandshake completes c's handshake and hands the connection to
// Accept: the *tls.Conn for HTTP/2 (or any protocol the server takes over
// by http.Server.TLSNextProto), the refusal-rewriting one for HTTP/1.x.
func (l *tlsListener) serveHandshake(raw net.Conn) {
	tc := tls.Server(raw, l.config)
	ready := l.shake(raw, tc)
	l.mu.Lock()
	closed := l.handshake == nil
	if !closed {
		delete(l.handshake, raw)
	}
	l.mu.Unlock()
	if !ready || closed {
		raw.Close()
		return
	}
	var c net.Conn = tc
	switch tc.ConnectionState().NegotiatedProtocol {
	case "", "http/1.1", "http/1.0":
		c = &tlsRefusalConn{refusalConn: refusalConn{Conn: tc}, tls: tc}
	}
	select {
	case l.conns <- c:
	case <-l.done:
		raw.Close()
	}
}

// shake runs the handshake within the timeout; a client that spoke plain
// HTTP is answered a Cosmos-shaped 400 in plain HTTP.
func (l *tlsListener) shake(raw net.Conn, tc *tls.Conn) bool {
	if l.opts.HandshakeTimeout > 0 {
		_ = raw.SetDeadline(time.Now().Add(l.opts.HandshakeTimeout))
	}
	err := tc.Handshake()
	if err == nil {
		return raw.SetDeadline(time.Time{}) == nil
	}
	reason := err.Error()
	var re tls.RecordHeaderError
	if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
		_, _ = re.Conn.Write(cosmosRefusal(http.StatusBadRequest, "the client sent an HTTP request to an HTTPS server; use https://"))
		reason = "client sent an HTTP request to an HTTPS server"
	}
	select {
	case <-l.done: // closed: not the client's doing
	default:
		l.opts.Logf("TLS handshake error from %s: %s", raw.RemoteAddr(), reason)
	}
	return false
}

// looksLikeHTTP reports whether the first 5 bytes of what a client sent
// to the TLS port begin a plain HTTP request (net/http's own test).
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "PATCH", "DELET":
		return true
	}
	return false
}

// tlsRefusalConn is an HTTP/1.x connection over TLS whose net/http
// refusals are rewritten; ConnectionState lets net/http set
// http.Request.TLS as it does for a *tls.Conn.
type tlsRefusalConn struct {
	refusalConn
	tls *tls.Conn
}

// ConnectionState returns the TLS connection's state.
func (c *tlsRefusalConn) ConnectionState() tls.ConnectionState { return c.tls.ConnectionState() }
