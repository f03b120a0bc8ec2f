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
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	catalog *catalog
	logf    func(format string, args ...any)
	now     func() time.Time
	lsn     atomic.Uint64 // logical sequence number, one per write, for session tokens
	admin   sync.Mutex    // serialises database and collection creates and deletes
	paths   sync.Map      // collection link -> []string: partition-key path, cached
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
	o := store.OptionsOf(opts)
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
	return &Server{st: st, key: key, catalog: cat, logf: o.Logf, now: time.Now, extensions: extensions(st), bodyTimeout: o.BodyTimeout}, nil
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

func (w *responseWriter) WriteHeader(status int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

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
	segs, err := splitPath(c.segs[:0], r.URL.EscapedPath())
	if err != nil {
		c.fail(errorf(http.StatusBadRequest, "%v", err))
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

// splitPath appends the segments of an escaped URL path to dst,
// unescaped, ignoring one leading and one trailing slash.
func splitPath(dst []string, escaped string) ([]string, error) {
	p := strings.TrimSuffix(strings.TrimPrefix(escaped, "/"), "/")
	if p == "" {
		return nil, nil
	}
	for part := range strings.SplitSeq(p, "/") {
		seg, err := url.PathUnescape(part)
		if err != nil || seg == "" {
			return nil, fmt.Errorf("malformed resource path %q", escaped)
		}
		dst = append(dst, seg)
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
// endpoint is the address the client used.
func (s *Server) account(c *call) *apiError {
	scheme := "http"
	if c.r.TLS != nil {
		scheme = "https"
	}
	c.json(http.StatusOK, accountJSON(scheme+"://"+c.r.Host+"/"), 0)
	return nil
}

func newActivityID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// set sets a response header whose key is in canonical form
// ("X-Ms-Request-Charge") without canonicalising it again; the values of
// an answer share one array.
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
	c.set("X-Ms-Activity-Id", c.activity)
	if charge == float64(int64(charge)) && charge >= 0 && charge < 100 {
		c.set("X-Ms-Request-Charge", charges[int(charge)])
	} else {
		c.set("X-Ms-Request-Charge", strconv.FormatFloat(charge, 'f', 2, 64))
	}
	c.set("X-Ms-Serviceversion", "version=docshard")
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
func (c *call) jsonDocument(status int, ref collRef, body []byte, pkText, id string, charge float64) {
	end := bytes.LastIndexByte(body, '}')
	if end < 0 {
		c.json(status, body, charge)
		return
	}
	system := ref.appendSystem(c.scratch[:0], pkText, id)
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
	c.set("X-Ms-Session-Token", token)
	c.set("Lsn", token[len("0:-1#"):])
}

// fail answers an error as Cosmos DB does.
func (c *call) fail(e *apiError) {
	c.header(0)
	if e.substatus != 0 {
		c.set("X-Ms-Substatus", strconv.Itoa(e.substatus))
	}
	if e.status == http.StatusTooManyRequests {
		c.set("X-Ms-Retry-After-Ms", strconv.FormatInt(e.retryAfter.Milliseconds(), 10))
	}
	if c.bodyDeadline && !c.bodyRead && c.r.ProtoMajor == 1 {
		// The body was not read, or not all of it: the connection ends
		// with this answer rather than wait for the rest. (An HTTP/2
		// stream's unread body holds no connection.)
		c.set("Connection", "close")
	}
	body, _ := json.Marshal(map[string]string{"code": e.code, "message": e.msg + "\r\nActivityId: " + c.activity + ", docshard serve"})
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
