package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/docshard/docshard/emulator"
	"github.com/docshard/docshard/store/memstore"
)

// ServeKeyEnv names the account key docshard serve answers instead of the
// well-known emulator key.
const ServeKeyEnv = "DOCSHARD_SERVE_KEY"

// Files docshard serve keeps next to the store for --self-signed.
const (
	serveCertFile = "serve-cert.pem"
	serveKeyFile  = "serve-key.pem"
)

// serveLockTimeout is how long serve waits for another process to release
// the directory: a server that cannot have it says so at once.
const serveLockTimeout = 100 * time.Millisecond

// shutdownGrace is how long requests in flight may run after a stop signal.
const shutdownGrace = 30 * time.Second

// maxReadTimeout bounds --header-timeout and --body-timeout.
const maxReadTimeout = time.Hour

type serveFlags struct {
	dir, addr        string
	tlsCert, tlsKey  string
	selfSigned       bool
	insecureHTTP     bool
	shutdownDeadline time.Duration
	headerTimeout    time.Duration
	bodyTimeout      time.Duration
	emulatorTokens   bool
}

func newServeCmd(g *globals) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve --dir DIR [--addr HOST:PORT]",
		Short: "Serve the embedded store in DIR over Cosmos DB's REST API",
		Long: `serve opens the durable embedded store in DIR and answers Azure Cosmos DB's REST
API on --addr (default 127.0.0.1:8081), so that other processes use it through
store {kind: cosmos, endpoint: ...} and any Cosmos DB SDK can reach it. Requests
are signed with the well-known emulator key unless DOCSHARD_SERVE_KEY sets
another. The endpoint is printed alone on the first line of stdout. On a
loopback address it serves plain HTTP; elsewhere HTTPS with --tls-cert and
--tls-key, or --self-signed (a certificate kept in DIR), unless --insecure-http.
A request's headers must arrive within --header-timeout and its body within
--body-timeout of them (a slower body is answered 408 and its connection
closed); headers past 1 MB are answered 431. Every refusal has Cosmos DB's
JSON error body ({"code": ..., "message": ...}), but one: over HTTP/2, Go's
server answers a header list past the limit itself, in HTML (docs/serve.md).
SIGINT or SIGTERM stops it: it stops accepting, lets requests in flight finish
and closes the store.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return exitCode{code: 2, msg: fmt.Sprintf("serve takes no arguments, got %q", strings.Join(args, " "))}
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error { return runServe(g, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "directory of the durable embedded store to serve (required)")
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8081", "address to listen on, HOST:PORT (port 0 picks a free one)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM); needs --tls-key")
	fl.StringVar(&f.tlsKey, "tls-key", "", "private key (PEM) of --tls-cert")
	fl.BoolVar(&f.selfSigned, "self-signed", false, "serve HTTPS with a self-signed certificate, kept in DIR/"+serveCertFile+" for clients to trust")
	fl.BoolVar(&f.insecureHTTP, "insecure-http", false, "allow plain HTTP on an address that is not loopback")
	fl.DurationVar(&f.shutdownDeadline, "shutdown-timeout", shutdownGrace, "how long requests in flight may run after SIGINT or SIGTERM")
	fl.DurationVar(&f.headerTimeout, "header-timeout", emulator.DefaultHeaderTimeout, "how long a request's headers may take to arrive (0: no limit)")
	fl.DurationVar(&f.bodyTimeout, "body-timeout", emulator.DefaultBodyTimeout, "how long a request's body may take to arrive after its headers; a slower one is answered 408 and its connection closed (0: no limit)")
	fl.BoolVar(&f.emulatorTokens, "accept-emulator-tokens", false, "accept the official emulator's Entra ID tokens (type=aad, kid "+emulator.EmulatorTokenKeyID+
		", carrying the account key) with the key in "+ServeKeyEnv+" too; they are always accepted with the well-known emulator key. "+
		"Such a token is signed by no issuer: whoever knows the key can mint one, and each request carries the key in the clear")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return exitCode{code: 2, msg: "serve: " + err.Error()}
	})
	return cmd
}

func runServe(g *globals, f *serveFlags) error {
	usage := func(format string, args ...any) error {
		return exitCode{code: 2, msg: "serve: " + fmt.Sprintf(format, args...)}
	}
	if f.dir == "" {
		return usage("--dir is required: the directory of the embedded store to serve")
	}
	if err := durationFlag("shutdown-timeout", f.shutdownDeadline, maxShutdownWait); err != nil {
		return err
	}
	if err := durationFlag("header-timeout", f.headerTimeout, maxReadTimeout); err != nil {
		return err
	}
	if err := durationFlag("body-timeout", f.bodyTimeout, maxReadTimeout); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		return usage("--addr %q: want HOST:PORT (%v)", f.addr, err)
	}
	switch {
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return usage("--tls-cert and --tls-key go together")
	case f.tlsCert != "" && f.selfSigned:
		return usage("give --tls-cert and --tls-key, or --self-signed, not both")
	case f.insecureHTTP && (f.tlsCert != "" || f.selfSigned):
		return usage("--insecure-http asks for plain HTTP, but a certificate was given")
	}
	useTLS := f.tlsCert != "" || f.selfSigned
	if !useTLS && !loopbackHost(host) && !f.insecureHTTP {
		return usage("--addr %s is not a loopback address, and plain HTTP would carry documents and signatures unencrypted over the network: "+
			"give --tls-cert and --tls-key, or --self-signed for a generated certificate, or --insecure-http to serve plain HTTP anyway", f.addr)
	}
	key := os.Getenv(ServeKeyEnv)
	keyNote := "the well-known emulator key"
	if key != "" {
		if _, err := base64.StdEncoding.DecodeString(key); err != nil {
			return usage("%s is not base64 (an account key is)", ServeKeyEnv)
		}
		keyNote = "the key in " + ServeKeyEnv
	}
	var tlsConfig *tls.Config
	var certNote string
	if useTLS {
		var err error
		if tlsConfig, certNote, err = serveTLS(f, host); err != nil {
			return err
		}
	}

	// The address first: a port in use fails before the store's file is
	// created or locked.
	ln, err := net.Listen("tcp", f.addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("serve: --addr %s is in use (another docshard serve, or a Cosmos DB emulator?): stop it, or give another --addr (%s:0 picks a free port and prints it on stdout's first line)", f.addr, host)
	}
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", f.addr, err)
	}
	st, err := memstore.Open(f.dir, &memstore.Options{LockTimeout: serveLockTimeout})
	if err != nil {
		ln.Close()
	}
	if errors.Is(err, memstore.ErrLocked) {
		return fmt.Errorf("serve: --dir %s is in use: %s is held by another process (another docshard serve, or a command with store.path %s); stop it, or serve another --dir",
			f.dir, filepath.Join(f.dir, "docshard.db"), f.dir)
	}
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	logf := func(format string, args ...any) { fmt.Fprintf(g.stderr, "docshard serve: "+format+"\n", args...) }
	bodyTimeout := f.bodyTimeout
	if bodyTimeout == 0 {
		bodyTimeout = -1 // no limit
	}
	emu, err := emulator.New(st, &emulator.Options{Key: key, Dir: f.dir, Logf: logf, BodyTimeout: bodyTimeout, AcceptEmulatorTokens: f.emulatorTokens})
	if err != nil {
		ln.Close()
		st.Close()
		return fmt.Errorf("serve: %w", err)
	}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	endpoint := scheme + "://" + net.JoinHostPort(publicHost(host), port) + "/"
	fmt.Fprintln(g.stdout, endpoint)
	logf("serving %s at %s (signatures with %s); stop with SIGINT or SIGTERM", f.dir, endpoint, keyNote)
	if certNote != "" {
		logf("%s", certNote)
	}

	srv := &http.Server{
		Handler:           emu,
		ReadHeaderTimeout: f.headerTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    emulator.MaxHeaderBytes,
		ErrorLog:          log.New(lineWriter{logf}, "", 0),
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	// net/http's own refusals Cosmos-shaped, over HTTPS too (HTTP/2 as well).
	httpLn := emulator.Listener(ln)
	if tlsConfig != nil {
		handshake := f.headerTimeout
		if handshake == 0 {
			handshake = -1 // no limit, as for headers
		}
		httpLn = emulator.ListenerTLS(ln, tlsConfig, &emulator.TLSOptions{HandshakeTimeout: handshake, Logf: logf})
	}
	go func() { served <- srv.Serve(httpLn) }()
	select {
	case err := <-served:
		st.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	stop() // a second signal ends the process at once
	logf("stopping: no new connections; finishing the requests in flight (at most %s)", f.shutdownDeadline)
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownDeadline)
	defer cancel()
	shutdownErr := srv.Shutdown(sctx)
	<-served
	if err := st.Close(); err != nil {
		return fmt.Errorf("serve: closing the store: %w", err)
	}
	if shutdownErr != nil {
		return fmt.Errorf("serve: requests still running after %s were cut off (%v); every acknowledged write is in the store, which is closed", f.shutdownDeadline, shutdownErr)
	}
	logf("stopped; the store is closed")
	return nil
}

// lineWriter reports what net/http logs (TLS handshake errors and the
// like) as one line each.
type lineWriter struct{ logf func(string, ...any) }

func (w lineWriter) Write(b []byte) (int, error) {
	w.logf("%s", strings.TrimSpace(string(b)))
	return len(b), nil
}

// loopbackHost reports whether a listen host is this machine only.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// publicHost is the host clients use: the listen host, or for all
// interfaces ("", 0.0.0.0, ::) the machine's name.
func publicHost(host string) string {
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return host
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		return name
	}
	return "localhost"
}

// serveTLS returns the TLS configuration of --tls-cert/--tls-key, or of
// --self-signed: a certificate kept in DIR (made on first use, or when it
// no longer covers the host or expires within a day), so clients trust it
// across restarts.
func serveTLS(f *serveFlags, host string) (*tls.Config, string, error) {
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return nil, "", exitCode{code: 2, msg: fmt.Sprintf("serve: --tls-cert/--tls-key: %v", err)}
		}
		return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, "", nil
	}
	hosts := []string{publicHost(host), "localhost", "127.0.0.1", "::1"}
	if host != "" && publicHost(host) != host {
		hosts = append(hosts, host)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					hosts = append(hosts, n.IP.String())
				}
			}
		}
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("serve: %w", err)
	}
	certPath, keyPath := filepath.Join(f.dir, serveCertFile), filepath.Join(f.dir, serveKeyFile)
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil || !covers(cert, hosts) {
		certPEM, keyPEM, err := emulator.SelfSignedCertificate(hosts, 365*24*time.Hour)
		if err != nil {
			return nil, "", fmt.Errorf("serve: %w", err)
		}
		if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
			return nil, "", fmt.Errorf("serve: %w", err)
		}
		if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
			return nil, "", fmt.Errorf("serve: %w", err)
		}
		if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return nil, "", fmt.Errorf("serve: %w", err)
		}
	}
	note := fmt.Sprintf("HTTPS with the self-signed certificate %s: clients trust it with %s=%s", certPath, CAEnv, certPath)
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, note, nil
}

// covers reports whether a certificate names every host and stays valid
// for at least a day.
func covers(cert tls.Certificate, hosts []string) bool {
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil || time.Until(leaf.NotAfter) < 24*time.Hour {
		return false
	}
	for _, h := range hosts {
		if leaf.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}
