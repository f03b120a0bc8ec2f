// Package cosmostest runs a local Cosmos DB-compatible server for tests:
// cosmium v0.1.20 (github.com/pikami/cosmium), built from the module cache,
// started on a free loopback port with a TLS certificate made for the run,
// and stopped at the end. The azcosmos client reaches it over HTTPS and
// trusts exactly that certificate; TLS verification stays on.
//
// cosmium is not faithful everywhere (see DEVELOPERS.md): tests skip
// exactly those cases, with the reason.
package cosmostest

import (
	"context"
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
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/docshard/docshard/internal/testserver"
)

// Version is the cosmium version the harness builds (pinned in go.mod).
const Version = "v0.1.20"

// Key is the well-known emulator account key cosmium accepts.
const Key = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// Server is a running cosmium.
type Server struct {
	Endpoint string         // https://127.0.0.1:PORT/ (http:// from StartHTTP)
	CertPool *x509.CertPool // trusts the server's certificate only
	CertPEM  []byte         // the certificate, to build pools trusting several servers
	cmd      *exec.Cmd
	dir      string
	exited   chan struct{}
}

// HTTPClient returns a client that trusts the server's certificate (and
// nothing else).
func (s *Server) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.CertPool, MinVersion: tls.VersionTLS12}}}
}

var buildMu sync.Mutex

// binary builds cosmium once per machine into the user cache directory
// (atomically, so concurrent test binaries do not collide).
func binary() (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "docshard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, fmt.Sprintf("cosmium-%s-%s-%s", Version, runtime.GOOS, runtime.GOARCH))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	_, self, _, _ := runtime.Caller(0)
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "github.com/pikami/cosmium/cmd/server")
	cmd.Dir = filepath.Dir(self) // inside the docshard module, whose go.mod pins cosmium
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cosmium %s: %v\n%s", Version, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// writeCert makes a self-signed certificate for 127.0.0.1.
func writeCert(dir string) (*x509.CertPool, []byte, string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "docshard cosmium test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, "", "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, "", "", err
	}
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		return nil, nil, "", "", err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return nil, nil, "", "", err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool, certPEM, certPath, keyPath, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PID is the server's process id (for benchmarks that measure its CPU).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Start builds (once) and starts a server, and waits until it answers.
func Start() (*Server, error) { return start(true) }

// StartHTTP is Start over plain HTTP (cosmium's -DisableTls), for
// benchmarks that compare it with another plain-HTTP server.
func StartHTTP() (*Server, error) { return start(false) }

func start(useTLS bool) (*Server, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "docshard-cosmium-")
	if err != nil {
		return nil, err
	}
	pool, certPEM, certPath, keyPath, err := writeCert(dir)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Endpoint: fmt.Sprintf("https://127.0.0.1:%d/", port), CertPool: pool, CertPEM: certPEM, dir: dir, exited: make(chan struct{})}
		args := []string{"-Host", "127.0.0.1", "-Port", strconv.Itoa(port), "-Cert", certPath, "-CertKey", keyPath, "-LogLevel", "error"}
		if !useTLS {
			s.Endpoint = fmt.Sprintf("http://127.0.0.1:%d/", port)
			args = append(args, "-DisableTls")
		}
		s.cmd = exec.Command(bin, args...)
		logFile, err := os.Create(filepath.Join(dir, fmt.Sprintf("cosmium-%d.log", port)))
		if err != nil {
			return nil, err
		}
		s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
		dieWithParent(s.cmd)
		if err := s.cmd.Start(); err != nil {
			return nil, err
		}
		go func() { _ = s.cmd.Wait(); close(s.exited) }()
		lastErr = s.waitReady(30 * time.Second)
		logFile.Close()
		if lastErr == nil {
			return s, nil
		}
		if log, _ := os.ReadFile(logFile.Name()); len(log) > 0 {
			lastErr = fmt.Errorf("%w; its log:\n%s", lastErr, log)
		}
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	return nil, lastErr
}

func (s *Server) waitReady(limit time.Duration) error {
	client := s.HTTPClient()
	client.Timeout = time.Second
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return errors.New("cosmium exited before answering (port taken?)")
		default:
		}
		resp, err := client.Get(s.Endpoint)
		if err == nil {
			resp.Body.Close()
			return nil // any answer, 401 included, means it is up
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("cosmium did not answer at %s within %s", s.Endpoint, limit)
}

// Stop kills the server and removes its files.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	_ = os.RemoveAll(s.dir)
}

var shared testserver.Shared[*Server]

// Shared returns the test binary's server, starting it on first use. Call
// StopShared from TestMain after the tests run.
func Shared(t testing.TB) *Server {
	t.Helper()
	return shared.Get(t, "cosmium", Start)
}

// StopShared stops the shared server if it was started, and removes its
// files.
func StopShared() { shared.Stop((*Server).Stop) }

// Context returns a context for one test's calls to the server, cancelled
// when the test ends or after two minutes.
func Context(t testing.TB) context.Context { return testserver.Context(t) }
