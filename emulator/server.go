package emulator

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/internal/redact"
	"github.com/docshard/docshard/store"
)

// Options configure a Server. A nil *Options means defaults.
type Options struct {
	// Key is the account key (base64) requests must be signed with; empty
	// means DefaultKey, the well-known emulator key.
	Key string
	// Dir is where the catalog of databases (CatalogFile) is kept, written
	// atomically; use the store's directory. Empty keeps it in memory, for
	// an in-memory store.
	Dir string
	// Logf reports what the client is not told in full: a handler's panic.
	// Nil discards it.
	Logf func(format string, args ...any)
	// BodyTimeout is how long a request's body may take to arrive, from
	// when its headers were read: a body still arriving then is answered
	// 408 (when the handler reads it) and its connection closed, so a
	// client trickling bodies, signed or not, holds no connection longer.
	// 0 means DefaultBodyTimeout; negative means no limit.
	BodyTimeout time.Duration
	// AcceptEmulatorTokens accepts the official emulator's Entra ID tokens
	// (type=aad, a JWT with kid EmulatorTokenKeyID carrying the account
	// key, as the SDKs' emulator tests make them) with a key other than
	// DefaultKey. With DefaultKey they are always accepted. Such a token is
	// signed by no issuer and carries the key in the clear: anyone who
	// knows the key can mint one, and anyone who sees one learns the key.
	AcceptEmulatorTokens bool
}

// The limits docshard serve reads requests with. BodyTimeout is the
// Server's own (Options.BodyTimeout); the others are http.Server's, which
// the caller sets (cmd/docshard/serve.go does), with Listener so that its
// refusals are Cosmos-shaped too.
const (
	// DefaultBodyTimeout is Options.BodyTimeout's default: a 3 MB body,
	// the largest accepted, arrives in it at 2.4 Mbit/s.
	DefaultBodyTimeout = 10 * time.Second
	// DefaultHeaderTimeout is how long docshard serve waits for a
	// request's headers (http.Server.ReadHeaderTimeout).
	DefaultHeaderTimeout = 10 * time.Second
	// MaxHeaderBytes is the most header bytes docshard serve reads
	// (http.Server.MaxHeaderBytes; net/http allows 4 KB more): Cosmos DB's
	// largest headers, session tokens and continuations, are far smaller.
	// Past it the request is answered 431, Cosmos-shaped through Listener.
	MaxHeaderBytes = 1 << 20
)

// String describes the options without the key.
func (o Options) String() string {
	return fmt.Sprintf("emulator.Options{Key: %q, Dir: %q}", redact.Secret(o.Key), o.Dir)
}

// GoString is String: %#v does not show the key either.
func (o Options) GoString() string { return o.String() }

// Format keeps the key out of every fmt verb.
func (o Options) Format(f fmt.State, verb rune) { redact.Format(f, verb, o.String()) }

// Server answers Cosmos DB's REST API over a store.Store. It is an
// http.Handler, safe for concurrent use; serve it with net/http. It holds
// no state of its own besides the catalog of databases, so the store is
// the truth and a restart on the same store loses nothing.
type Server struct {
	st      store.Store
	key     []byte
	keyText string // the key as given (base64), which emulator tokens carry
	// emulatorTokens says the emulator's Entra ID tokens are accepted
	// (authorizeEmulatorToken).
	emulatorTokens bool
	catalog        *catalog
	logf           func(format string, args ...any)
	now            func() time.Time
	lsn            atomic.Uint64 // logical sequence number, one per write, for session tokens
	admin          sync.Mutex    // serialises database and collection creates and deletes
	paths          sync.Map      // collection link -> []string: partition-key path, cached
	// extensions is HeaderServe's value: docshard's extensions the store
	// supports.
	extensions  string
	refs        refCache  // collections addressed, with their ids
	signers     sync.Pool // *signer
	bodyTimeout time.Duration

	lastDate atomic.Pointer[parsedDate] // the last x-ms-date parsed
}

// String describes the server without its key.
func (s *Server) String() string { return "emulator.Server{Key: " + redact.Mask + "}" }

// Format keeps the key out of every fmt verb.
func (s *Server) Format(f fmt.State, verb rune) { redact.Format(f, verb, s.String()) }

// New returns a server over st. The key must be base64 (Cosmos DB's account
// keys are); a catalog in opts.Dir that cannot be read is an error. It costs
// reading the catalog.
func New(st store.Store, opts *Options) (*Server, error) {
	o := opt.Of(opts)
	if o.Key == "" {
		o.Key = DefaultKey
	}
	key, err := base64.StdEncoding.DecodeString(o.Key)
	if err != nil || len(key) == 0 {
		return nil, errors.New("emulator: the account key is not base64")
	}
	cat, err := openCatalog(o.Dir)
	if err != nil {
		return nil, err
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.BodyTimeout == 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	return &Server{st: st, key: key, keyText: o.Key, emulatorTokens: o.AcceptEmulatorTokens || o.Key == DefaultKey,
		catalog: cat, logf: o.Logf, now: time.Now, extensions: extensions(st), bodyTimeout: o.BodyTimeout}, nil
}

// call is one request being answered. It is one allocation, which holds
// the scratch space of the common answers.
type call struct {
	s        *Server
	w        *responseWriter
	r        *http.Request
	activity string
	rw       responseWriter // what w points to
	segs     [8]string      // the path's segments
	// bodyDeadline says the connection's read deadline bounds the body;
	// bodyRead that the handler read all of it (the deadline is lifted).
	bodyDeadline, bodyRead bool
	vals                   [12]string // response header values (set)
	nvals                  int
	scratch                [256]byte // a document's system properties
}

// responseWriter records whether the response has begun, so a panic is
// answered only when nothing was written yet.
type responseWriter struct {
	http.ResponseWriter
	wrote bool
}

// WriteHeader sends the status and the headers, their names as Cosmos DB
// sends them (lowerHeaderNames): the one place every answer's headers are
// written.
func (w *responseWriter) WriteHeader(status int) {
	if !w.wrote {
		lowerHeaderNames(w.ResponseWriter.Header())
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// lowerHeaderNames renames the headers of h to lower case, as Cosmos DB
// names its own (x-ms-continuation, etag, lsn): net/http writes an HTTP/1.1
// header's name as the map holds it, and http.Header.Set stores it in Go's
// canonical form (X-Ms-Continuation), which clients that look names up in
// lower case, as the Python SDK v3 does, never find. HTTP's own headers
// that net/http reads from the map in canonical form (Content-Type,
// Content-Length, Connection, ...) keep it. Over HTTP/2 every name is
// lower case on the wire anyway. Names set in lower case, as call.set's
// callers do, cost a scan of their bytes and nothing else.
func lowerHeaderNames(h http.Header) {
	for name, v := range h {
		if !needsLowering(name) {
			continue
		}
		delete(h, name)
		h[lowerName(name)] = v
	}
}

// needsLowering says whether a header's name has upper case and is not one
// of HTTP's own that net/http reads in canonical form.
func needsLowering(name string) bool {
	switch name {
	case "Content-Type", "Content-Length", "Connection", "Transfer-Encoding", "Trailer", "Date", "Content-Encoding":
		return false
	}
	for i := 0; i < len(name); i++ {
		if 'A' <= name[i] && name[i] <= 'Z' {
			return true
		}
	}
	return false
}

// lowerName is a header's name in lower case: the common ones without an
// allocation.
func lowerName(name string) string {
	if l, ok := lowerNames[name]; ok {
		return l
	}
	return strings.ToLower(name)
}

// lowerNames are the lower-case names of the headers the emulator sets in
// Go's canonical form (with http.Header.Set).
var lowerNames = func() map[string]string {
	m := map[string]string{}
	for _, l := range []string{"etag", "lsn", "x-ms-continuation", "x-ms-item-count", "x-ms-session-token",
		"x-ms-request-charge", "x-ms-activity-id", "x-ms-substatus", "x-ms-retry-after-ms", "x-ms-serviceversion",
		"x-ms-resource-usage", "x-ms-resource-quota", "x-ms-documentdb-query-metrics", "x-ms-cosmos-index-utilization",
		"x-ms-documentdb-partitionkeyrangeid", "x-ms-alt-content-path", "x-ms-content-path", "x-ms-global-committed-lsn",
		HeaderServe, HeaderFence, HeaderQuota} {
		m[http.CanonicalHeaderKey(l)] = strings.ToLower(l)
	}
	return m
}()

// Unwrap gives http.ResponseController the writer it wraps.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHTTP answers one request: it checks the signature, routes by path
// and method, and answers errors with Cosmos DB's status and body. A panic
// in a handler is answered 500 with a Cosmos-shaped body and reported to
// Options.Logf; the server keeps serving.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := &call{s: s, r: r, activity: headerValue(r.Header, "X-Ms-Activity-Id"), rw: responseWriter{ResponseWriter: w}}
	c.w = &c.rw
	if c.activity == "" {
		c.activity = newActivityID()
	}
	if s.bodyTimeout > 0 && r.ContentLength != 0 {
		// Every read of the body is bounded: the handler's, and net/http's
		// after a handler that answered without reading it (an unsigned
		// request), which would otherwise wait for up to 256 KB of it.
		rc := http.NewResponseController(c.w)
		c.bodyDeadline = rc.SetReadDeadline(time.Now().Add(s.bodyTimeout)) == nil
	}
	defer func() {
		if p := recover(); p != nil {
			s.logf("internal error answering %s %s (activity %s): %v", r.Method, r.URL.Path, c.activity, p)
			if !c.w.wrote {
				c.fail(errorf(http.StatusInternalServerError, "internal error in docshard serve: %v", p))
			}
		}
	}()
	segs, e := splitPath(c.segs[:0], r.URL.EscapedPath())
	if e != nil {
		c.fail(e)
		return
	}
	resType, resLink := signingTarget(segs)
	if e := s.authorize(r, resType, resLink); e != nil {
		c.fail(e)
		return
	}
	if e := s.route(c, segs); e != nil {
		if e.code == CodeFenced && len(segs) > 1 {
			s.fencedAnswer(c, segs[1])
		}
		c.fail(e)
	}
}

// splitPath appends to dst the segments of a request's escaped URL path
// as Cosmos DB's gateway reads them, which is not always as the SDKs wrote
// them: an SDK escapes an id into its path segment (url.PathEscape) and
// signs the id as it is, and where the gateway reads another resource
// link than the one signed, the signature fails (401). The gateway
//
//   - decodes the path (an invalid escape is 400), and refuses a control
//     character in it, CR, LF and Tab among them, with 400;
//   - decodes it a second time where escapes remain ("%2520" is a space);
//   - reads '\' as '/' and a decoded '/' as a separator, and ends the path
//     at a decoded '#';
//   - drops trailing spaces;
//   - skips empty segments: a leading or trailing slash, and a doubled one,
//     so "//dbs" is "/dbs" (the Python SDK v3 joins its region endpoint
//     "https://host:8081/" with "/dbs"). No resource has an empty id.
//
// So ids ending in a space, holding '/', '\', '#', or an escape sequence
// ("%20") can be created (their id is in the body) but not read, replaced
// or deleted through the gateway (401), and ids holding CR, LF or Tab not
// either (400), as azcosmos's TestItemIdEncodingRoutingGW expects of the
// service; '?' and other characters are addressed as they are. A path
// without escapes, spaces or backslashes costs a scan and no allocation.
func splitPath(dst []string, escaped string) ([]string, *apiError) {
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "malformed resource path %q", escaped)
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f {
			return nil, errorf(http.StatusBadRequest, "The request URL is invalid: the resource path %q holds the control character %q, which Cosmos DB's gateway refuses (address such a document by a query)", escaped, c)
		}
	}
	if strings.IndexByte(p, '%') >= 0 {
		if twice, err := url.PathUnescape(p); err == nil {
			p = twice
		}
	}
	if strings.IndexByte(p, '\\') >= 0 {
		p = strings.ReplaceAll(p, "\\", "/")
	}
	if i := strings.IndexByte(p, '#'); i >= 0 {
		p = p[:i]
	}
	p = strings.TrimRight(p, " ")
	for seg := range strings.SplitSeq(p, "/") {
		if seg != "" {
			dst = append(dst, seg)
		}
	}
	return dst, nil
}

// route dispatches a signed request by its resource path.
func (s *Server) route(c *call, segs []string) *apiError {
	n := len(segs)
	if n == 0 {
		return c.only(http.MethodGet, s.account)
	}
	switch segs[0] {
	case "dbs":
	case "offers":
		switch n {
		case 1:
			return s.offers(c)
		case 2:
			return s.offer(c, segs[1])
		}
		return errorf(http.StatusNotFound, "no such resource: /%s", strings.Join(segs, "/"))
	default:
		return errorf(http.StatusNotFound, "no such resource: /%s", strings.Join(segs, "/"))
	}
	switch {
	case n == 1:
		return s.databases(c)
	case n == 2:
		return s.database(c, segs[1])
	case segs[2] == "colls":
	case segs[2] == "users":
		return unsupported("users and permissions")
	case segs[2] == "clientencryptionkeys":
		return unsupported("client encryption keys")
	default:
		return errorf(http.StatusNotFound, "no such resource: /%s", strings.Join(segs, "/"))
	}
	switch {
	case n == 3:
		return s.collections(c, segs[1])
	case n == 4:
		return s.collection(c, s.refs.get(segs[1], segs[3]))
	}
	coll := s.refs.get(segs[1], segs[3])
	switch segs[4] {
	case "docs":
		switch {
		case n == 5:
			return s.documents(c, coll)
		case n == 6:
			return s.document(c, coll, segs[5])
		}
		return unsupported("attachments")
	case "pkranges":
		if n == 5 {
			return c.only(http.MethodGet, func(c *call) *apiError { return s.pkRanges(c, coll) })
		}
		return unsupported("reading one partition-key range")
	case "sprocs":
		return unsupported("stored procedures")
	case "udfs":
		return unsupported("user-defined functions")
	case "triggers":
		return unsupported("triggers")
	case "conflicts":
		return unsupported("conflicts")
	}
	return errorf(http.StatusNotFound, "no such resource: /%s", strings.Join(segs, "/"))
}

// headerValue is h.Get(key) for a key given in canonical form
// ("X-Ms-Date"), which it looks up without canonicalising it again.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// only runs h for the given method and answers 405 for any other.
func (c *call) only(method string, h func(*call) *apiError) *apiError {
	if c.r.Method != method {
		return c.badMethod()
	}
	return h(c)
}

func (c *call) badMethod() *apiError {
	return errorf(http.StatusMethodNotAllowed, "%s is not allowed on %s", c.r.Method, c.r.URL.Path)
}

// account answers GET /: the database account, whose one region's
// endpoint is the address the client used (regionEndpoint).
func (s *Server) account(c *call) *apiError {
	c.json(http.StatusOK, accountJSON(regionEndpoint(c.r)), 0)
	return nil
}

// regionEndpoint is the endpoint the database account gives its one
// region: the scheme and host the client used, except that a client that
// named the host "localhost" is given the address its connection reached
// (https://127.0.0.1:8081/), as the official emulator answers its own IP
// address there (azcosmos's TestGlobalEndpointManagerEmulator expects it).
// Any other host is answered as the client gave it, so a server reached
// through a name or a forwarded port points its clients back the same way.
func regionEndpoint(r *http.Request) string {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil && strings.EqualFold(h, "localhost") {
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil {
			if ap, err := netip.ParseAddrPort(a.String()); err == nil && ap.Addr().Unmap().IsLoopback() {
				host = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
			}
		}
	}
	return scheme + host + "/"
}

func newActivityID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// set sets a response header under the name given, as it goes on the
// wire (Cosmos DB's own in lower case: "x-ms-request-charge"; HTTP's own
// in canonical form: "Content-Type"), without canonicalising it; the values
// of an answer share one array.
func (c *call) set(key, value string) {
	h := c.w.Header()
	if c.nvals == len(c.vals) {
		h[key] = []string{value}
		return
	}
	c.vals[c.nvals] = value
	h[key] = c.vals[c.nvals : c.nvals+1 : c.nvals+1]
	c.nvals++
}

// header sets the headers every answer carries.
func (c *call) header(charge float64) {
	c.set("x-ms-activity-id", c.activity)
	if charge == float64(int64(charge)) && charge >= 0 && charge < 100 {
		c.set("x-ms-request-charge", charges[int(charge)])
	} else {
		c.set("x-ms-request-charge", strconv.FormatFloat(charge, 'f', 2, 64))
	}
	c.set("x-ms-serviceversion", "version=docshard")
}

// charges are the texts of whole request charges below 100.
var charges = func() (out [100]string) {
	for i := range out {
		out[i] = strconv.FormatFloat(float64(i), 'f', 2, 64)
	}
	return out
}()

// json answers a JSON body.
func (c *call) json(status int, body []byte, charge float64) {
	c.header(charge)
	c.set("Content-Type", "application/json")
	c.set("Content-Length", strconv.Itoa(len(body)))
	c.w.WriteHeader(status)
	_, _ = c.w.Write(body)
}

// jsonDocument answers a stored document with the system properties
// withSystem adds, written around the stored text rather than into a copy
// of it.
func (c *call) jsonDocument(status int, ref collRef, body []byte, pkText, id string, seq uint64, charge float64) {
	end := bytes.LastIndexByte(body, '}')
	if end < 0 {
		c.json(status, body, charge)
		return
	}
	system := ref.appendSystem(c.scratch[:0], pkText, id, seq)
	c.header(charge)
	c.set("Content-Type", "application/json")
	c.set("Content-Length", strconv.Itoa(len(body)+len(system)))
	c.w.WriteHeader(status)
	_, _ = c.w.Write(body[:end])
	_, _ = c.w.Write(system)
	_, _ = c.w.Write(body[end:])
}

// empty answers a status without a body.
func (c *call) empty(status int, charge float64) {
	c.header(charge)
	c.w.WriteHeader(status)
}

// session sets the session token and LSN of a document operation; write
// says whether it changed something.
func (c *call) session(write bool) {
	lsn := c.s.lsn.Load()
	if write {
		lsn = c.s.lsn.Add(1)
	}
	var buf [32]byte
	token := string(strconv.AppendUint(append(buf[:0], "0:-1#"...), lsn, 10))
	c.set("x-ms-session-token", token)
	c.set("lsn", token[len("0:-1#"):])
}

// fail answers an error as Cosmos DB does.
func (c *call) fail(e *apiError) {
	c.header(0)
	if e.substatus != 0 {
		c.set("x-ms-substatus", strconv.Itoa(e.substatus))
	}
	if e.status == http.StatusTooManyRequests {
		c.set("x-ms-retry-after-ms", strconv.FormatInt(e.retryAfter.Milliseconds(), 10))
	}
	if c.bodyDeadline && !c.bodyRead && c.r.ProtoMajor == 1 {
		// The body was not read, or not all of it: the connection ends
		// with this answer rather than wait for the rest. (An HTTP/2
		// stream's unread body holds no connection.)
		c.set("Connection", "close")
	}
	fields := map[string]string{"code": e.code, "message": e.msg + "\r\nActivityId: " + c.activity + ", docshard serve"}
	if e.additional != "" {
		fields["additionalErrorInfo"] = e.additional
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the service writes < > & as they are
	_ = enc.Encode(fields)
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	c.set("Content-Type", "application/json")
	c.set("Content-Length", strconv.Itoa(len(body)))
	c.w.WriteHeader(e.status)
	_, _ = c.w.Write(body)
}

// maxBody is the largest request body read: a document of the store's
// largest size with room for a query's or a patch's envelope. Larger bodies
// are answered 413.
const maxBody = store.MaxDocumentSize + 1<<20

// body reads the request body, within the server's body timeout.
func (c *call) body() ([]byte, *apiError) {
	data, err := readBody(c.w, c.r)
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return nil, errorf(http.StatusRequestEntityTooLarge, "%s the request body is larger than %d bytes", msgTooLarge, maxBody)
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, errorf(http.StatusRequestTimeout, "the request body did not arrive within %s of its headers (docshard serve --body-timeout)", c.s.bodyTimeout)
		}
		return nil, errorf(http.StatusBadRequest, "reading the request body: %v", err)
	}
	if c.bodyDeadline {
		// All of it arrived: the rest of the request is not bounded by it.
		c.bodyRead = http.NewResponseController(c.w).SetReadDeadline(time.Time{}) == nil
	}
	return data, nil
}

// presizeBody is the largest Content-Length readBody allocates for before
// the body arrives: a client cannot make the server hold much memory for
// bodies it does not send.
const presizeBody = 256 << 10

// readBody reads a request body of at most maxBody bytes, into a buffer of
// its Content-Length when it gives one of at most presizeBody.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, maxBody)
	if r.ContentLength <= 0 || r.ContentLength > presizeBody {
		return io.ReadAll(body)
	}
	data := make([]byte, r.ContentLength, r.ContentLength+1)
	if _, err := io.ReadFull(body, data); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("the body ended before its Content-Length (%d bytes): %w", r.ContentLength, err)
		}
		return nil, err
	}
	// net/http's server ends a body at its Content-Length; a handler called
	// otherwise may be given a longer one, read to its end.
	var more [1]byte
	if n, _ := body.Read(more[:]); n == 0 {
		return data, nil
	}
	rest, err := io.ReadAll(body)
	return append(append(data, more[0]), rest...), err
}

// decode reads a JSON object body into v.
func (c *call) decode(what string, v any) *apiError {
	data, e := c.body()
	if e != nil {
		return e
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return errorf(http.StatusBadRequest, "the %s is not valid JSON: %v", what, err)
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, "the %s has data after its JSON value", what)
	}
	return nil
}

// isQuery reports whether a POST to a feed is a query.
func (c *call) isQuery() bool {
	h := c.r.Header
	return isTrue(headerValue(h, "X-Ms-Documentdb-Isquery")) || isTrue(headerValue(h, "X-Ms-Documentdb-Query")) ||
		strings.HasPrefix(headerValue(h, "Content-Type"), "application/query+json")
}

func isTrue(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

// pageSize reads x-ms-max-item-count: 0 when absent (the store's default),
// -1 for as many as a page may hold.
func (c *call) pageSize() (int, *apiError) {
	v := strings.TrimSpace(c.r.Header.Get("x-ms-max-item-count"))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < -1 || n == 0 {
		return 0, errorf(http.StatusBadRequest, "x-ms-max-item-count %q: want -1 or a positive number", v)
	}
	return n, nil
}

// feedJSON writes a feed body: {"_rid": rid, key: [items], "_count": n}.
func feedJSON(rid, key string, items [][]byte) []byte {
	size := 64 + len(rid) + len(key)
	for _, it := range items {
		size += len(it) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, `{"_rid":`...)
	b = strconv.AppendQuote(b, rid)
	b = append(b, ',')
	b = strconv.AppendQuote(b, key)
	b = append(b, ":["...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"_count":`...)
	b = strconv.AppendInt(b, int64(len(items)), 10)
	return append(b, '}')
}
