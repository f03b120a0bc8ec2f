// Package emulatortest runs docshard's Cosmos DB emulator (package
// emulator) for tests: in process, on a free loopback port, over an
// in-memory store with a clock the test moves (or a durable store in a
// directory), answering the well-known emulator key. The cosmos backend
// and any azcosmos client reach it at Server.Endpoint.
package emulatortest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/internal/proctest"
	"github.com/docshard/docshard/internal/redact"
	"github.com/docshard/docshard/internal/testserver"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// Key is the key the servers answer: the well-known emulator key.
const Key = emulator.DefaultKey

// Options qualify a server. A nil *Options means an in-memory store over
// plain HTTP.
type Options struct {
	// Dir opens the durable store in Dir (and keeps the catalog of
	// databases there), as docshard serve does; empty means in memory.
	Dir string
	// Store serves this store instead (the caller closes it); Dir then
	// only holds the catalog.
	Store store.Store
	// TLS serves HTTPS with a self-signed certificate for 127.0.0.1;
	// Server.HTTPClient trusts it.
	TLS bool
	// Logf receives the emulator's reports (handler panics); nil discards.
	Logf func(format string, args ...any)
	// Addr is the address to listen on, "127.0.0.1:PORT"; empty means a
	// free port. A test restarts a server where its clients expect it by
	// closing it and starting another over the same Dir at its address.
	Addr string
}

// Server is a running emulator.
type Server struct {
	Endpoint string      // http://127.0.0.1:PORT/ (https with Options.TLS)
	Key      string      // the account key
	Store    store.Store // the store it serves
	CertPEM  []byte      // with Options.TLS: the certificate to trust

	srv        *http.Server
	offset     atomic.Int64 // the store's clock: now + offset
	ownsStore  bool
	closeOnce  sync.Once
	closeErr   error
	served     chan struct{}
	clientPool *x509.CertPool
}

// String describes the server by its endpoint, without its key.
func (s *Server) String() string {
	return fmt.Sprintf("emulatortest.Server{Endpoint: %q, Key: %s}", s.Endpoint, redact.Mask)
}

// Format keeps the key out of every fmt verb.
func (s *Server) Format(f fmt.State, verb rune) { redact.Format(f, verb, s.String()) }

// New starts a server; Close stops it.
func New(opts *Options) (*Server, error) {
	o := opt.Of(opts)
	s := &Server{Key: Key, served: make(chan struct{})}
	clock := func() time.Time { return time.Now().Add(time.Duration(s.offset.Load())) }
	switch {
	case o.Store != nil:
		s.Store = o.Store
	case o.Dir != "":
		st, err := memstore.Open(o.Dir, &memstore.Options{Clock: clock})
		if err != nil {
			return nil, err
		}
		s.Store, s.ownsStore = st, true
	default:
		s.Store, s.ownsStore = memstore.New(&memstore.Options{Clock: clock}), true
	}
	emu, err := emulator.New(s.Store, &emulator.Options{Dir: o.Dir, Logf: o.Logf})
	if err != nil {
		s.closeStore()
		return nil, err
	}
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.closeStore()
		return nil, err
	}
	s.srv = &http.Server{Handler: emu, ReadHeaderTimeout: 10 * time.Second}
	scheme := "http"
	if o.TLS {
		certPEM, keyPEM, err := emulator.SelfSignedCertificate([]string{"127.0.0.1", "localhost"}, 24*time.Hour)
		if err != nil {
			ln.Close()
			s.closeStore()
			return nil, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			ln.Close()
			s.closeStore()
			return nil, err
		}
		s.CertPEM = certPEM
		s.clientPool = x509.NewCertPool()
		s.clientPool.AppendCertsFromPEM(certPEM)
		s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		scheme = "https"
	}
	s.Endpoint = scheme + "://" + ln.Addr().String() + "/"
	go func() {
		defer close(s.served)
		if o.TLS {
			_ = s.srv.ServeTLS(ln, "", "") // HTTP/2 as well
			return
		}
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Start starts a server that stops when the test ends.
func Start(t testing.TB, opts *Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatalf("emulatortest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("emulatortest: %v", err)
		}
	})
	return s
}

// HTTPClient returns a client for the server, which keeps up to 100 idle
// connections to it as azcosmos's own client does: with TLS, one that
// trusts its certificate and nothing else, and speaks HTTP/2.
func (s *Server) HTTPClient() *http.Client {
	t := &http.Transport{MaxIdleConns: 100, MaxIdleConnsPerHost: 100, IdleConnTimeout: 90 * time.Second, ForceAttemptHTTP2: true}
	if s.clientPool != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: s.clientPool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: t}
}

// Advance moves the store's clock forward (for TTL), for stores the server
// made.
func (s *Server) Advance(d time.Duration) { s.offset.Add(int64(d)) }

// Close stops accepting, waits for the requests being answered, and closes
// the store it opened. Close again is a no-op.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := s.srv.Shutdown(ctx)
		<-s.served
		s.closeErr = errors.Join(err, s.closeStore())
	})
	return s.closeErr
}

func (s *Server) closeStore() error {
	if s.ownsStore {
		return s.Store.Close()
	}
	return nil
}

var shared testserver.Shared[*Server]

// Shared returns the test binary's server (in memory, plain HTTP),
// starting it on first use. Call StopShared from TestMain.
func Shared(t testing.TB) *Server {
	t.Helper()
	return shared.Get(t, "emulatortest", func() (*Server, error) { return New(nil) })
}

// StopShared stops the shared server if it was started.
func StopShared() { shared.Stop(func(s *Server) { _ = s.Close() }) }

// Context returns a context for one test's calls, cancelled when the test
// ends or after two minutes.
func Context(t testing.TB) context.Context { return testserver.Context(t) }

// Backend opens the cosmos backend (package cosmos) on the emulator at
// endpoint, with its key: the store a service reaches docshard serve
// through. Its calls are HTTP requests to the server.
func Backend(ctx context.Context, endpoint string) (store.Store, error) {
	return cosmos.Open(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: endpoint, Key: Key}})
}

// EndpointEnv is the environment variable through which a test's child
// process (internal/proctest) learns the endpoint of the parent's server:
// the parent passes EndpointEnv+"="+srv.Endpoint to proctest.Start, and
// the child calls ChildBackend.
const EndpointEnv = "DOCSHARD_EMULATOR_ENDPOINT"

// ChildBackend opens the cosmos backend on the server whose endpoint the
// parent process passed in EndpointEnv.
func ChildBackend(ctx context.Context) (store.Store, error) {
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		return nil, fmt.Errorf("emulatortest: %s is not set: the parent passes it to proctest.Start", EndpointEnv)
	}
	return Backend(ctx, endpoint)
}

// Child begins a child process's test that works on its parent's server
// (proctest.Child: it skips t unless the parent started this process for
// it) and opens the cosmos backend there (ChildBackend). When it cannot,
// it says "fatal ..." to the parent (proctest.Say) and returns nil: the
// child's test then returns.
func Child(t testing.TB) store.Store {
	t.Helper()
	proctest.Child(t)
	st, err := ChildBackend(context.Background())
	if err != nil {
		proctest.Say("fatal %v", err)
		return nil
	}
	return st
}

// StartBackend starts a server that stops when the test ends (Start, an
// in-memory store over plain HTTP) and opens the cosmos backend on it
// (Backend): the store of a test whose other processes reach the same
// server through EndpointEnv. The test fails if either cannot be done.
func StartBackend(ctx context.Context, t testing.TB) (*Server, store.Store) {
	t.Helper()
	srv := Start(t, nil)
	st, err := Backend(ctx, srv.Endpoint)
	if err != nil {
		t.Fatalf("emulatortest: %v", err)
	}
	return srv, st
}
