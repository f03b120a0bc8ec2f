package transition_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/transition"
)

// The exactness test (issue 27): docshard serve (in this process, over
// the durable store in a directory) reached through the cosmos backend by
// four clients at once, across reshards 2 -> 4 -> 2:
//
//   - a reader: a router following the state with the default poll
//     interval that only reads the fixed documents, which nothing changes
//     after the seed (point reads, COUNTs, ORDER BY walked page by page in
//     one pager and by continuation tokens), and COUNTs the writer's
//     documents;
//   - a writer: a router following the state that creates, upserts,
//     replaces and deletes documents of its own (writeLoop), recorded in a
//     ledger and a count of its live documents after each operation;
//   - an evictor: one-page queries on another database of the same serve,
//     more than its store's cursor cache holds (memstore keeps 256);
//   - serve itself, closed and reopened over the same directory once per
//     reshard, in the middle of the copy.
//
// The reshard's hooks pace the others (pacer): at each page of its walks
// (the copy and the clean-up) they evict every cursor serve holds, restart
// serve when due, and wait for the reader's next round (and in the copy
// the writer's next operations), so every page of the walk is interleaved
// with them whatever the scheduler does. Every answer the reader got is checked (a
// COUNT of the writer's documents against the counts the writer's model
// went through while the query ran), and so is the final store, read
// straight through azcosmos: every document once, where the final
// resolver puts it, at its last acknowledged version, nothing deleted.
//
// DOCSHARD_EXACT_LONG=1 runs more documents and more reshards.

// fixedPrefix starts the ids of the reader's documents.
const fixedPrefix = "fix-"

type exactConfig struct {
	fixed     int   // the reader's documents, never changed after the seed
	targets   []int // the reshards, by collection count, from 2
	evictions int   // one-page queries per eviction: more than serve's cursor cache
	pageSize  int   // the reader's ORDER BY page size
	pointRead int   // point reads per reader round
}

func exactConfigOf() exactConfig {
	c := exactConfig{fixed: 1500, targets: []int{4, 2}, evictions: 300, pageSize: 200, pointRead: 4}
	if os.Getenv("DOCSHARD_EXACT_LONG") != "" {
		c.fixed, c.targets, c.pageSize = 10000, []int{4, 2, 5, 3, 2}, 1000
	}
	return c
}

// TestExactness: see above.
func TestExactness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs docshard serve under four clients across reshards")
	}
	cfg := exactConfigOf()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	sv := startRestartable(t)

	// The seed: the fixed documents, through the writer's router.
	wst := sv.backend(ctx, t)
	wc, wf := followEnsured(ctx, t, wst, &router.FollowOptions{Seed: ring(t, 2)})
	t.Cleanup(func() { _ = wf.Close() })
	m := newModel()
	fixed := make([]doc, cfg.fixed)
	for i := range fixed {
		fixed[i] = doc{ID: fmt.Sprintf("%s%06d", fixedPrefix, i), UserID: fmt.Sprintf("u%d", i%500), V: 1}
		m.set(fixed[i].ID, fixed[i].UserID, 1)
	}
	var seed errgroup.Group
	seed.SetLimit(8)
	for _, d := range fixed {
		seed.Go(func() error {
			if _, err := wc.Create(ctx, db, d, nil); err != nil {
				return fmt.Errorf("seeding %s: %w", d.ID, err)
			}
			return nil
		})
	}
	require.NoError(t, seed.Wait())

	ev := newEvictor(ctx, t, sv.backend(ctx, t), cfg.evictions)
	rd := newReader(ctx, t, sv.backend(ctx, t), fixed, m, cfg)

	stopWorkers := startWorkers(ctx, t, wc, rand.New(rand.NewPCG(27, 1)), 20*time.Millisecond, m, rd)

	rst := sv.backend(ctx, t)
	for i, n := range cfg.targets {
		p := &pacer{sv: sv, ev: ev, m: m, rd: rd, restartAt: 2}
		prog, err := transition.Reshard(ctx, rst, db, ring(t, n), &transition.ReshardOptions{
			Parallelism: 1, // one walk at a time, so the pacer's restart stops no other
			Routers:     &shardstate.WaitOptions{Poll: 20 * time.Millisecond},
			Progress:    p.page,
			Step:        p.step,
		})
		require.NoError(t, err, "reshard %d to %d collections", i+1, n)
		require.NoError(t, p.err(), "reshard %d to %d collections: the pacer", i+1, n)
		t.Logf("reshard %d to %d: scanned %d, copied %d, caught up %d, deleted %d; %d walk pages paced, serve restarted %d times",
			i+1, n, prog.Scanned, prog.Copied, prog.CaughtUp, prog.Deleted, p.paced, p.restarts)
	}
	stopWorkers()

	// The final store, straight through azcosmos.
	r := settled(t, rst, ring(t, cfg.targets[len(cfg.targets)-1]))
	found := sv.readAll(ctx, t, "app")
	checkEnd(t, found, r, m, rd)
	total := 0
	for _, docs := range found {
		total += len(docs)
	}
	t.Logf("final store: %d documents in %d collections; the writer made %d operations; %d evictions of %d queries",
		total, len(found), m.ops(), ev.bursts.Load(), cfg.evictions)
}

// startWorkers runs the writer (writeLoop through c, one operation every
// interval, told to m) and the reader until the returned function is
// called (or the test ends), which stops both and waits for them.
func startWorkers(ctx context.Context, t *testing.T, c *router.Client, rng *rand.Rand, interval time.Duration, m *model, rd *reader) (stop func()) {
	done := make(chan struct{})
	var workers sync.WaitGroup
	workers.Go(func() {
		writeLoop(ctx, c, rng, "w", interval, done, m.ack, m.unknown)
		m.done()
	})
	workers.Go(func() { rd.run(ctx, done) })
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(done)
			workers.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

// restartable is docshard serve (emulatortest, in this process) over the
// durable store in a directory, restarted at the address its clients use.
type restartable struct {
	dir      string
	endpoint string // the server's, the same across restarts
	mu       sync.Mutex
	srv      *emulatortest.Server
}

func startRestartable(t *testing.T) *restartable {
	s := &restartable{dir: t.TempDir()}
	srv, err := emulatortest.New(&emulatortest.Options{Dir: s.dir})
	require.NoError(t, err)
	s.srv, s.endpoint = srv, srv.Endpoint
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		_ = s.srv.Close()
	})
	return s
}

// restart closes serve (its requests answered, its store closed) and
// opens it again over the same directory, listening where it did.
func (s *restartable) restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.srv.Close(); err != nil {
		return fmt.Errorf("closing serve: %w", err)
	}
	u, err := url.Parse(s.endpoint)
	if err != nil {
		return err
	}
	srv, err := emulatortest.New(&emulatortest.Options{Dir: s.dir, Addr: u.Host})
	if err != nil {
		return fmt.Errorf("opening serve again over %s at %s: %w", s.dir, u.Host, err)
	}
	s.srv = srv
	return nil
}

func (s *restartable) httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 100, MaxIdleConnsPerHost: 100, IdleConnTimeout: 90 * time.Second}}
}

// backend opens a client of its own: the cosmos backend on serve.
func (s *restartable) backend(ctx context.Context, t *testing.T) store.Store {
	st, err := cosmos.Open(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: s.endpoint, Key: emulatortest.Key}, HTTPClient: s.httpClient()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// readAll reads every collection of a database but the state's, whole,
// straight through azcosmos: collection link -> documents.
func (s *restartable) readAll(ctx context.Context, t *testing.T, database string) map[string][]json.RawMessage {
	cred, err := azcosmos.NewKeyCredential(emulatortest.Key)
	require.NoError(t, err)
	c, err := azcosmos.NewClientWithKey(s.endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: s.httpClient()}})
	require.NoError(t, err)
	dbc, err := c.NewDatabase(database)
	require.NoError(t, err)
	found := map[string][]json.RawMessage{}
	containers := dbc.NewQueryContainersPager("SELECT * FROM c", nil)
	for containers.More() {
		page, err := containers.NextPage(ctx)
		require.NoError(t, err)
		for _, props := range page.Containers {
			if props.ID == shardstate.CollectionID {
				continue
			}
			cc, err := dbc.NewContainer(props.ID)
			require.NoError(t, err)
			l := "dbs/" + database + "/colls/" + props.ID
			found[l] = []json.RawMessage{}
			items := cc.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 1000})
			for items.More() {
				page, err := items.NextPage(ctx)
				require.NoError(t, err, "reading %s", l)
				for _, it := range page.Items {
					found[l] = append(found[l], it)
				}
			}
		}
	}
	return found
}

// evictor is a client of another database of the same serve: each of its
// one-page queries leaves a cursor in serve's store, so a burst of more
// than the store's cursor cache holds evicts every cursor the other
// clients' paged reads would resume from.
type evictor struct {
	st     store.Store
	coll   string
	n      int
	bursts atomic.Int64
}

func newEvictor(ctx context.Context, t *testing.T, st store.Store, n int) *evictor {
	e := &evictor{st: st, coll: "dbs/other/colls/e", n: n}
	require.NoError(t, st.CreateCollection(ctx, e.coll, &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	for i := range 3 {
		_, err := st.Create(ctx, e.coll, fmt.Appendf(nil, `{"id":"e%d","userId":"e"}`, i), nil)
		require.NoError(t, err)
	}
	return e
}

func (e *evictor) burst(ctx context.Context) error {
	var g errgroup.Group
	g.SetLimit(4)
	for range e.n {
		g.Go(func() error {
			page, err := e.st.Query(ctx, e.coll, store.Query{Text: "SELECT * FROM c"}, &store.QueryOptions{PageSize: 1, PartitionKey: "e"})
			if err != nil {
				return fmt.Errorf("evictor: %w", err)
			}
			if page.Continuation == "" {
				return errors.New("evictor: a one-page query of 3 documents left no cursor to resume")
			}
			return nil
		})
	}
	e.bursts.Add(1)
	return g.Wait()
}

// pacer is a reshard's step and progress hooks: at each page of its walks
// (the copy, from step "published" to "copied", and the clean-up, from
// "switched" to "cleaned") it evicts serve's cursors, then waits for the
// reader's next round; in the copy it restarts serve at the restartAt-th
// page, and waits for the writer's next operations too. (Not in the
// clean-up: a reshard may freeze the moving keys there, and a writer
// waiting for them would hold the pacer, and so the reshard, until its
// MovingWait ran out.)
type pacer struct {
	sv        *restartable
	ev        *evictor
	m         *model
	rd        *reader
	restartAt int

	mu       sync.Mutex
	walk     string // "copy", "clean-up", or none
	pages    int    // of the copy
	paced    int    // pages of both walks
	restarts int
	errs     []error
}

func (p *pacer) step(name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch name {
	case "published":
		p.walk = "copy"
	case "switched":
		p.walk = "clean-up"
	default:
		p.walk = ""
	}
	return nil
}

func (p *pacer) page(transition.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.walk == "" {
		return
	}
	p.paced++
	if p.walk == "copy" {
		if p.pages++; p.pages == p.restartAt {
			if err := p.sv.restart(); err != nil {
				p.errs = append(p.errs, err)
				return
			}
			p.restarts++
		}
	}
	if err := p.ev.burst(context.Background()); err != nil {
		p.errs = append(p.errs, err)
	}
	if p.walk == "copy" {
		p.m.waitOps(p.m.ops() + 2)
	}
	p.rd.nextRound()
}

func (p *pacer) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(p.errs...)
}

// model is what the writer was told: the ledger (each id's last
// acknowledged value, for the final store) and the count of its live
// documents after each of its operations (for the reader's COUNTs).
type model struct {
	*ledger
	mu       sync.Mutex
	cond     *sync.Cond
	counts   []int // counts[k]: live after the first k operations, those of unknown outcome taken as not done
	creates  []int // [k]: acknowledged creates among the first k operations
	deletes  []int // [k]: acknowledged deletes among them
	mayRaise []int // [k]: creates of unknown outcome among the first k operations
	mayLower []int // [k]: other operations of unknown outcome among them
	finished bool
	wrong    []string // answers to the writer no correct store gives
	failed   []string // writes that failed (outcome unknown)
}

func newModel() *model {
	m := &model{ledger: newLedger(),
		counts: []int{0}, creates: []int{0}, deletes: []int{0}, mayRaise: []int{0}, mayLower: []int{0}}
	m.cond = sync.NewCond(&m.mu)
	return m
}

func (m *model) next(delta, raise, lower int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := len(m.counts) - 1
	m.counts = append(m.counts, m.counts[k]+delta)
	m.creates = append(m.creates, m.creates[k]+max(delta, 0))
	m.deletes = append(m.deletes, m.deletes[k]-min(delta, 0))
	m.mayRaise = append(m.mayRaise, m.mayRaise[k]+raise)
	m.mayLower = append(m.mayLower, m.mayLower[k]+lower)
	m.cond.Broadcast()
}

// ack records an acknowledged write (writeLoop's creates write v 1, its
// upserts and replaces v 2 and up, its deletes report -1).
func (m *model) ack(id, key string, v int) {
	m.set(id, key, v)
	switch v {
	case 1:
		m.next(1, 0, 0)
	case -1:
		m.next(-1, 0, 0)
	default:
		m.next(0, 0, 0)
	}
}

// unknown records a write that failed: a create (of a new id) may or may
// not have happened, and so may a delete; NotFound for an id the model
// says exists, or Conflict for a new id, is a wrong answer.
func (m *model) unknown(id string, err error) {
	m.ledger.mu.Lock()
	v, known := m.value[id]
	wasUnknown := m.ledger.unknown[id]
	m.ledger.unknown[id] = true
	m.ledger.mu.Unlock()
	m.mu.Lock()
	switch {
	case known && !wasUnknown && v > 0 && errors.Is(err, store.ErrNotFound):
		m.wrong = append(m.wrong, fmt.Sprintf("%s (acknowledged at v%d, never deleted) answered NotFound: %v", id, v, err))
	case !known && errors.Is(err, store.ErrConflict):
		m.wrong = append(m.wrong, fmt.Sprintf("the create of the new id %s answered Conflict: %v", id, err))
	default:
		m.failed = append(m.failed, fmt.Sprintf("%s: %v", id, err))
	}
	m.mu.Unlock()
	if known {
		m.next(0, 0, 1)
	} else {
		m.next(0, 1, 0)
	}
}

func (m *model) done() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finished = true
	m.cond.Broadcast()
}

// ops is how many operations the writer has finished.
func (m *model) ops() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.counts) - 1
}

// waitOps waits until the writer finished n operations (or stopped).
func (m *model) waitOps(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.counts)-1 < n && !m.finished {
		m.cond.Wait()
	}
}

// bounds is the range of the COUNTs of the writer's live documents that a
// query begun once it had finished from operations, and answered before
// it finished to+1 (the one in flight at the end), may answer, widened by
// the operations of unknown outcome.
//
// A COUNT over several collections is not one instant's count: it sums
// each collection's count at the moment that collection was read, and
// those moments differ. Each operation of the window (from+1 to to+1)
// changes one collection (the one owning its key; in a transition's read
// modes a collection counts only what it owns), so the answer is
// counts[from] plus the changes of any subset of the window's operations
// (on each collection, those made before the collection was read). A
// delete followed by a create on another collection, read in the other
// order, answers one more than the writer ever had live (see
// TestFanOutCountIsNotOneInstant). So the range is counts[from] less the
// window's deletes to counts[from] plus its creates.
func (m *model) bounds(from, to int) (lo, hi int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := min(to+1, len(m.counts)-1)
	lo = m.counts[from] - (m.deletes[last] - m.deletes[from])
	hi = m.counts[from] + (m.creates[last] - m.creates[from])
	return lo - m.mayLower[last], hi + m.mayRaise[last]
}

// instants is the narrower range of the counts the writer went through in
// the same window (widened alike): an answer of bounds outside it is one a
// fan-out gives by reading its collections at different moments.
func (m *model) instants(from, to int) (lo, hi int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := min(to+1, len(m.counts)-1)
	lo, hi = slices.Min(m.counts[from:last+1]), slices.Max(m.counts[from:last+1])
	return lo - m.mayLower[last], hi + m.mayRaise[last]
}

func (m *model) report(t *testing.T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t.Logf("writer: %d operations, %d failed (outcome unknown)%s", len(m.counts)-1, len(m.failed), sample(m.failed, 5))
	if len(m.wrong) > 0 {
		t.Errorf("writer: %d wrong answers:%s", len(m.wrong), sample(m.wrong, 20))
	}
}

const (
	countFixed   = "SELECT VALUE COUNT(1) FROM c WHERE STARTSWITH(c.id, 'fix-')"
	countWriters = "SELECT VALUE COUNT(1) FROM c WHERE NOT STARTSWITH(c.id, 'fix-')"
	orderFixed   = "SELECT VALUE c.id FROM c WHERE STARTSWITH(c.id, 'fix-') ORDER BY c.id"
)

// reader is the reader-only router and what it was answered.
type reader struct {
	c     *router.Client
	f     *router.Follower
	m     *model // the writer's, for the COUNTs of its documents
	fixed []doc
	cfg   exactConfig
	rng   *rand.Rand

	kick    chan struct{} // a round now
	mu      sync.Mutex
	cond    *sync.Cond
	round   int
	busy    bool // a round is under way
	stopped bool
	checked map[string]int           // answers checked, by kind
	refused map[string]int           // errors, by kind and class
	errs    map[string]string        // an error of each kind and class
	wrong   map[string][]wrongAnswer // by kind
	counts  []countAnswer            // COUNTs of the writer's documents, checked once it stopped
	// betweenInstants: COUNTs right, but no count the writer had at one
	// instant (see model.bounds)
	betweenInstants []string

	pager   *router.Pager // the ORDER BY walked in one pager
	inPager orderWalk
	token   string // the ORDER BY walked by continuation tokens
	byToken orderWalk
}

// orderWalk is an ORDER BY of the fixed documents, walked a page a round.
type orderWalk struct {
	kind  string
	n     int      // walks finished
	ids   []string // the rows of the walk under way
	began string   // the reader's state at its first page; empty: none under way
}

func (w *orderWalk) start(at string) {
	if w.began == "" {
		w.ids, w.began = w.ids[:0], at
	}
}

// wrongAnswer is an answer no correct store gives. When it is wrong only
// by lacking documents, missing names them (or short counts them, of the
// fixed ones or of the writer's): if the final store lost them or holds
// them where no router looks, that explains it.
type wrongAnswer struct {
	msg     string
	missing []string
	short   int
	writers bool // short counts the writer's documents
}

// lacksOnly reports whether the answer lacks only documents of unfound.
func (w wrongAnswer) lacksOnly(unfound map[string]bool) bool {
	if w.short > 0 {
		n := 0
		for id := range unfound {
			if strings.HasPrefix(id, fixedPrefix) != w.writers {
				n++
			}
		}
		return w.short <= n
	}
	for _, id := range w.missing {
		if !unfound[id] {
			return false
		}
	}
	return len(w.missing) > 0
}

type countAnswer struct {
	got, from, to int
	at            string // the reader's state when the query began
}

func newReader(ctx context.Context, t *testing.T, st store.Store, fixed []doc, m *model, cfg exactConfig) *reader {
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, nil) // the default poll interval and lease
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	r := &reader{c: c, f: f, m: m, fixed: fixed, cfg: cfg, rng: rand.New(rand.NewPCG(27, 2)),
		checked: map[string]int{}, refused: map[string]int{}, errs: map[string]string{}, wrong: map[string][]wrongAnswer{}}
	r.cond = sync.NewCond(&r.mu)
	r.kick = make(chan struct{}, 1)
	r.inPager.kind, r.byToken.kind = "ORDER BY in one pager", "ORDER BY by tokens"
	return r
}

func (r *reader) run(ctx context.Context, stop <-chan struct{}) {
	defer func() {
		r.mu.Lock()
		r.stopped = true
		r.cond.Broadcast()
		r.mu.Unlock()
	}()
	for {
		select {
		case <-stop:
			return
		case <-r.kick: // the pacer asks for a round
		case <-time.After(500 * time.Millisecond): // a steady reader, not a flood
		}
		r.mu.Lock()
		r.busy = true
		r.mu.Unlock()
		r.once(ctx)
		r.mu.Lock()
		r.busy = false
		r.round++
		r.cond.Broadcast()
		r.mu.Unlock()
	}
}

// nextRound has the reader start a round now, and waits until it finished
// it (or stopped).
func (r *reader) nextRound() {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.round + 1
	if r.busy {
		n++ // the round under way began before this call
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
	for r.round < n && !r.stopped {
		r.cond.Wait()
	}
}

// at describes the state the reader routes by: its version and the
// reshard's step, if one is under way.
func (r *reader) at() string {
	s := r.f.State()
	var phase struct {
		Reshard *struct {
			Step string `json:"step"`
		} `json:"reshard"`
	}
	_ = json.Unmarshal(s.Phase, &phase)
	if phase.Reshard == nil {
		return fmt.Sprintf("version %d, no reshard", s.Version)
	}
	return fmt.Sprintf("version %d, reshard step %s", s.Version, phase.Reshard.Step)
}

// errClass names what kind of refusal an error is.
func errClass(err error) string {
	switch {
	case errors.Is(err, router.ErrLeaseExpired):
		return "lease lapsed"
	case errors.Is(err, router.ErrBadContinuation):
		return "token refused"
	case errors.Is(err, store.ErrFenced):
		return "fenced"
	case errors.Is(err, store.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, store.ErrNotFound):
		return "not found"
	case errors.Is(err, store.ErrBadRequest):
		return "bad request"
	}
	return "other"
}

func (r *reader) refuse(kind string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := kind + ": " + errClass(err)
	r.refused[k]++
	if _, ok := r.errs[k]; !ok {
		r.errs[k] = err.Error()
	}
}

func (r *reader) check(kind string, ok bool, format string, args ...any) {
	r.checkLacking(kind, ok, wrongAnswer{}, format, args...)
}

// checkLacking is check for an answer that, when wrong, may lack
// documents and be otherwise right: lack says which (see wrongAnswer).
func (r *reader) checkLacking(kind string, ok bool, lack wrongAnswer, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checked[kind]++
	if !ok {
		lack.msg = fmt.Sprintf(format, args...)
		r.wrong[kind] = append(r.wrong[kind], lack)
	}
}

// once is a round: point reads, the COUNTs, a page of each ORDER BY walk.
func (r *reader) once(ctx context.Context) {
	for range r.cfg.pointRead {
		d := r.fixed[r.rng.IntN(len(r.fixed))]
		got, err := r.c.Read(ctx, db, d.ID, d.UserID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			r.checkLacking("point read", false, wrongAnswer{missing: []string{d.ID}}, "%s (key %s) answered NotFound (reader at %s): %v", d.ID, d.UserID, r.at(), err)
		case err != nil:
			r.refuse("point read", err)
		default:
			var g doc
			_ = json.Unmarshal(got.Body, &g)
			r.check("point read", g == d, "%s answered %+v, want %+v", d.ID, g, d)
		}
	}

	if n, err := r.count(ctx, countFixed); err != nil {
		r.refuse("count of the fixed documents", err)
	} else {
		r.checkLacking("count of the fixed documents", n == len(r.fixed), wrongAnswer{short: len(r.fixed) - n}, "answered %d, want %d (reader at %s)", n, len(r.fixed), r.at())
	}

	from := r.m.ops()
	at := r.at()
	if n, err := r.count(ctx, countWriters); err != nil {
		r.refuse("count of the writer's documents", err)
	} else {
		r.mu.Lock()
		r.counts = append(r.counts, countAnswer{got: n, from: from, to: r.m.ops(), at: at})
		r.mu.Unlock()
	}

	// The ORDER BY in one pager, a page a round.
	if r.pager == nil {
		r.pager = r.c.NewQueryPager(db, store.Query{Text: orderFixed}, &router.QueryOptions{PageSize: r.cfg.pageSize})
	}
	r.inPager.start(r.at())
	page, err := r.pager.NextPage(ctx)
	r.orderPage(&r.inPager, page, err, !r.pager.More())
	if err != nil || !r.pager.More() {
		r.pager = nil
	}

	// The ORDER BY by continuation tokens: a new pager for each page.
	r.byToken.start(r.at())
	p := r.c.NewQueryPager(db, store.Query{Text: orderFixed}, &router.QueryOptions{PageSize: r.cfg.pageSize, Continuation: r.token})
	page, err = p.NextPage(ctx)
	r.token = ""
	if err == nil {
		r.token = page.Continuation
	}
	r.orderPage(&r.byToken, page, err, r.token == "")
}

// orderPage takes a page of an ORDER BY walk (or its error, which ends
// the walk unchecked); the last page checks it.
func (r *reader) orderPage(w *orderWalk, page *router.QueryPage, err error, last bool) {
	if err != nil {
		r.refuse(w.kind, err)
		w.began = ""
		return
	}
	for _, it := range page.Items {
		var id string
		_ = json.Unmarshal(it, &id)
		w.ids = append(w.ids, id)
	}
	if last {
		w.n++
		r.checkWalk(w)
		w.began = ""
	}
}

func (r *reader) count(ctx context.Context, text string) (int, error) {
	rows, err := r.c.Query(ctx, db, store.Query{Text: text}, nil)
	if err != nil {
		return 0, err
	}
	if len(rows) != 1 {
		return 0, fmt.Errorf("a COUNT answered %d rows", len(rows))
	}
	var n int
	if err := json.Unmarshal(rows[0], &n); err != nil {
		return 0, err
	}
	return n, nil
}

// checkWalk checks an ORDER BY walk: every fixed document exactly once, in
// order.
func (r *reader) checkWalk(w *orderWalk) {
	ids := w.ids
	seen := map[string]int{}
	disorder := 0
	for i, id := range ids {
		seen[id]++
		if i > 0 && id < ids[i-1] {
			disorder++
		}
	}
	var missing, repeated []string
	for _, d := range r.fixed {
		if seen[d.ID] == 0 {
			missing = append(missing, d.ID)
		}
	}
	for id, n := range seen {
		if n > 1 || !strings.HasPrefix(id, fixedPrefix) {
			repeated = append(repeated, fmt.Sprintf("%s x%d", id, n))
		}
	}
	sort.Strings(repeated)
	lacking := missing
	if len(repeated) > 0 || disorder > 0 {
		lacking = nil // wrong in more ways than lacking documents
	}
	r.checkLacking(w.kind, len(missing) == 0 && len(repeated) == 0 && disorder == 0, wrongAnswer{missing: lacking},
		"walk %d (begun at %s, ended at %s): %d rows for %d documents: %d missing %v, %d repeated or foreign %v, out of order at %d places",
		w.n, w.began, r.at(), len(ids), len(r.fixed), len(missing), missing[:min(5, len(missing))], len(repeated), repeated[:min(5, len(repeated))], disorder)
}

// checkEnd checks the final store's documents (found) against r and the
// writer's ledger, then the reader's answers (excusing the documents the
// store lost for the loss it is) and the writer's.
func checkEnd(t *testing.T, found map[string][]json.RawMessage, r resolver.Resolver, m *model, rd *reader) {
	unfound := map[string]bool{}
	for _, id := range checkFound(t, found, r, m.ledger) {
		unfound[id] = true
	}
	rd.checkCounts(m)
	rd.report(t, unfound)
	m.report(t)
}

// checkCounts checks the COUNTs of the writer's documents, now that the
// writer stopped and every count its model went through is known.
func (r *reader) checkCounts(m *model) {
	r.mu.Lock()
	answers := slices.Clone(r.counts)
	r.mu.Unlock()
	for _, a := range answers {
		lo, hi := m.bounds(a.from, a.to)
		ok := a.got >= lo && a.got <= hi
		r.checkLacking("count of the writer's documents", ok, wrongAnswer{short: lo - a.got, writers: true},
			"answered %d, want %d..%d (the writer's operations %d..%d; reader at %s)", a.got, lo, hi, a.from, a.to+1, a.at)
		if ilo, ihi := m.instants(a.from, a.to); ok && (a.got < ilo || a.got > ihi) {
			r.mu.Lock()
			r.betweenInstants = append(r.betweenInstants, fmt.Sprintf("answered %d, the writer had %d..%d (operations %d..%d; reader at %s)", a.got, ilo, ihi, a.from, a.to+1, a.at))
			r.mu.Unlock()
		}
	}
}

// report reports the reader's answers; unfound are the documents the
// final store lost or holds where no router looks.
func (r *reader) report(t *testing.T, unfound map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, kind := range slices.Sorted(maps.Keys(r.checked)) {
		t.Logf("reader: %s: %d answers checked, %d wrong", kind, r.checked[kind], len(r.wrong[kind]))
	}
	if len(r.betweenInstants) > 0 {
		t.Logf("reader: count of the writer's documents: %d answers no instant of the writer's had, as a fan-out reading its collections at different moments may give:%s",
			len(r.betweenInstants), sample(r.betweenInstants, 5))
	}
	for _, k := range slices.Sorted(maps.Keys(r.refused)) {
		t.Logf("reader: %s: %d refused, e.g. %s", k, r.refused[k], r.errs[k])
	}
	for _, kind := range []string{"point read", "count of the fixed documents", "count of the writer's documents", "ORDER BY in one pager", "ORDER BY by tokens"} {
		assert.Positive(t, r.checked[kind], "reader: no %s was answered", kind)
		if w := r.wrong[kind]; len(w) > 0 {
			msgs, explained := make([]string, len(w)), 0
			for i, a := range w {
				msgs[i] = a.msg
				if a.lacksOnly(unfound) {
					explained++
				}
			}
			t.Errorf("reader: %s: %d of %d answers wrong (%d of them lack only documents the final store lost or misplaced):%s",
				kind, len(w), r.checked[kind], explained, sample(msgs, 10))
		}
	}
}
