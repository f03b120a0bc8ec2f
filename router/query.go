package router

import (
	"container/heap"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// QueryOptions qualify a query. A nil *QueryOptions means the client's
// defaults for parallelism and buffering, no partition key, 100 results a
// page.
type QueryOptions struct {
	// PartitionKey narrows the query to the collections that may hold this
	// key, and to documents with this key; nil means every collection. A
	// key that is not a single value, such as a rangeresolver.Range, narrows
	// the collections only (ResolveForRead of the range).
	PartitionKey any
	// MaxDegreeOfParallelism is how many collections are queried at once:
	// 0 serially, -1 automatically (all, up to 64), n at most n. As in the
	// Cosmos DB SDKs, 0 means serial: set it when you set other options.
	MaxDegreeOfParallelism int
	// MaxBufferedItemCount bounds the rows held from all collections at
	// once (each collection's page size is this divided by their number);
	// 0 means the client's default. DISTINCT and aggregate queries hold
	// their whole result regardless.
	MaxBufferedItemCount int
	// PageSize is the most results a page returns; 0 means 100.
	PageSize int
	// Continuation resumes a query after the page that returned it.
	Continuation string
	// PartialResults returns what the healthy collections answered when
	// some fail, instead of failing the query; the page's error is then a
	// *PartialError (wrapping ErrPartialResults) naming the failures.
	PartialResults bool
}

// QueryPage is one page of results.
type QueryPage struct {
	// Items are the results as JSON.
	Items []json.RawMessage
	// Continuation resumes after this page; empty at the end.
	Continuation string
	// Failed names the collections that failed, with PartialResults.
	Failed map[string]error
}

// Pager walks the pages of a query across collections, azcosmos style:
//
//	pager := client.NewQueryPager(db, q, nil)
//	for pager.More() {
//		page, err := pager.NextPage(ctx)
//		...
//	}
type Pager struct {
	c      *Client
	dbLink string
	q      store.Query
	opts   QueryOptions
	err    error // a set-up error, returned by the first NextPage
	done   bool

	plan    *query.Plan
	links   []string
	scoped  bool
	keyText string
	hash    string
	perColl int

	// Resumable shapes (stream and ORDER BY without DISTINCT).
	srcs    []*source
	offLeft int
	limLeft int // -1: no limit
	heap    *sourceHeap
	started bool

	// Recomputed shapes (aggregates, GROUP BY, DISTINCT).
	results []any
	emitted int
}

// source is one collection's position in the query.
type source struct {
	idx    int
	link   string
	token  string // the store continuation of the buffered page ("" = first)
	next   string // the store continuation after it
	raw    []json.RawMessage
	keys   [][]any // ORDER BY keys of raw
	pos    int     // rows of raw consumed
	loaded bool
	done   bool // nothing after raw
	failed error
}

func (s *source) available() bool { return s.loaded && s.pos < len(s.raw) }

// exhausted reports whether the source has nothing more to give.
func (s *source) exhausted() bool {
	return s.failed != nil || (s.loaded && s.pos >= len(s.raw) && s.done)
}

// token is the continuation token's content.
type routerToken struct {
	V      int           `json:"v"`
	Hash   string        `json:"h"`
	Srcs   []sourceToken `json:"c,omitempty"`
	Off    int           `json:"o,omitempty"`
	Lim    int           `json:"l"`
	Skip   int           `json:"n,omitempty"`
	Failed []string      `json:"f,omitempty"`
}

type sourceToken struct {
	T string `json:"t,omitempty"`
	S int    `json:"s,omitempty"`
	D bool   `json:"d,omitempty"`
}

// NewQueryPager prepares a query over the database's collections. Errors
// (unknown database, malformed SQL, an unmergeable shape, a bad token) are
// returned by the first NextPage.
func (c *Client) NewQueryPager(dbLink string, q store.Query, opts *QueryOptions) *Pager {
	p := &Pager{c: c, dbLink: dbLink, q: q, limLeft: -1}
	if opts != nil {
		p.opts = *opts
	} else {
		p.opts.MaxDegreeOfParallelism = c.opts.MaxDegreeOfParallelism
	}
	if p.opts.PageSize <= 0 {
		p.opts.PageSize = 100
	}
	if p.opts.MaxBufferedItemCount <= 0 {
		p.opts.MaxBufferedItemCount = c.opts.MaxBufferedItemCount
	}
	p.err = p.setup()
	return p
}

// Query runs a query to the end and returns every result: a convenience
// for small results over NewQueryPager.
func (c *Client) Query(ctx context.Context, dbLink string, q store.Query, opts *QueryOptions) ([]json.RawMessage, error) {
	p := c.NewQueryPager(dbLink, q, opts)
	var out []json.RawMessage
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil && !errors.Is(err, ErrPartialResults) {
			return nil, err
		}
		out = append(out, page.Items...)
		if err != nil && !p.More() {
			return out, err
		}
	}
	return out, nil
}

func (p *Pager) setup() error {
	r, err := p.c.Resolver(p.dbLink)
	if err != nil {
		return err
	}
	params := make(map[string]any, len(p.q.Parameters))
	for _, prm := range p.q.Parameters {
		params[prm.Name] = prm.Value
	}
	parsed, err := query.Parse(p.q.Text)
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	if p.plan, err = query.PlanFanOut(parsed, params); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	if p.links, err = r.ResolveForRead(p.opts.PartitionKey); err != nil {
		return err
	}
	if len(p.links) == 0 {
		return fmt.Errorf("router: the resolver of %s names no collection for this query", p.dbLink)
	}
	if p.plan.SingleCollection {
		p.links = p.links[:1]
	}
	if p.opts.PartitionKey != nil {
		// A single value also scopes the documents; a key that is not one
		// (a rangeresolver.Range) only narrows the collections.
		if text, err := store.KeyText(storeKey(p.opts.PartitionKey)); err == nil {
			p.scoped, p.keyText = true, text
		} else {
			p.keyText = fmt.Sprintf("%v", p.opts.PartitionKey)
		}
	}
	p.perColl = max(1, p.opts.MaxBufferedItemCount/len(p.links))
	p.hash = p.tokenHash(params)
	p.srcs = make([]*source, len(p.links))
	for i, l := range p.links {
		p.srcs[i] = &source{idx: i, link: l}
	}
	if p.opts.Continuation != "" {
		return p.resume(p.opts.Continuation)
	}
	if !p.recomputed() {
		p.offLeft, p.limLeft = p.plan.Offset, p.plan.Limit
	}
	return nil
}

// recomputed reports whether the query's result is computed whole and paged
// by position (aggregates, GROUP BY, DISTINCT) rather than streamed.
func (p *Pager) recomputed() bool { return p.plan.Kind == query.Aggregate || p.plan.Distinct }

func (p *Pager) tokenHash(params map[string]any) string {
	h := fnv.New64a()
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := []string{p.dbLink, p.q.Text, p.keyText, strings.Join(p.links, ",")}
	for _, n := range names {
		b, _ := json.Marshal(params[n])
		parts = append(parts, n+"="+string(b))
	}
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

func (p *Pager) resume(tok string) error {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	var t routerToken
	if err == nil {
		err = json.Unmarshal(raw, &t)
	}
	if err != nil || t.V != 1 {
		return fmt.Errorf("%w: malformed", ErrBadContinuation)
	}
	if t.Hash != p.hash {
		return fmt.Errorf("%w: it belongs to another query, parameters, partition key or set of collections", ErrBadContinuation)
	}
	if p.recomputed() {
		if t.Skip < 0 {
			return fmt.Errorf("%w: negative position", ErrBadContinuation)
		}
		p.emitted = t.Skip
		return nil
	}
	if len(t.Srcs) != len(p.srcs) || t.Off < 0 || t.Lim < -1 {
		return fmt.Errorf("%w: it does not match the query's collections", ErrBadContinuation)
	}
	for i, st := range t.Srcs {
		if st.S < 0 {
			return fmt.Errorf("%w: negative position", ErrBadContinuation)
		}
		s := p.srcs[i]
		s.token, s.pos, s.done = st.T, st.S, st.D
		if st.D && st.S == 0 && st.T == "" {
			s.loaded = true // finished before this page
		}
	}
	for _, l := range t.Failed {
		for _, s := range p.srcs {
			if s.link == l {
				s.failed = errors.New("failed on an earlier page")
			}
		}
	}
	p.offLeft, p.limLeft = t.Off, t.Lim
	return nil
}

// More reports whether NextPage has a page to return.
func (p *Pager) More() bool { return !p.done }

// NextPage returns the next page. After an error (other than partial
// results) the pager is done.
func (p *Pager) NextPage(ctx context.Context) (*QueryPage, error) {
	if p.done {
		return nil, errors.New("router: NextPage after the last page")
	}
	if p.err != nil {
		p.done = true
		return nil, p.err
	}
	if !p.started {
		p.started = true
		if h := p.c.opts.Hooks.FanOut; h != nil {
			h(p.dbLink, len(p.links))
		}
	}
	var page *QueryPage
	var err error
	if p.recomputed() {
		page, err = p.nextRecomputed(ctx)
	} else {
		page, err = p.nextStreamed(ctx)
	}
	if err != nil {
		p.done = true
		return nil, err
	}
	if h := p.c.opts.Hooks.Documents; h != nil {
		h(p.dbLink, len(page.Items))
	}
	if page.Continuation == "" {
		p.done = true
	}
	if len(page.Failed) > 0 {
		return page, &PartialError{Failed: page.Failed}
	}
	return page, nil
}

// fetch loads the source's next page.
func (p *Pager) fetch(ctx context.Context, s *source) error {
	if s.loaded {
		s.token, s.raw, s.keys, s.pos, s.loaded = s.next, nil, nil, 0, false
	}
	skip := s.pos
	opts := &store.QueryOptions{PageSize: p.perColl, Continuation: s.token}
	if p.scoped {
		opts.PartitionKey = storeKey(p.opts.PartitionKey)
	}
	var page *store.Page
	err := p.c.call(ctx, s.link, "query", func() (err error) {
		page, err = p.c.st.Query(ctx, s.link, store.Query{Text: p.plan.Query, Parameters: p.q.Parameters}, opts)
		return err
	})
	if err != nil {
		return err
	}
	if skip > len(page.Items) {
		return fmt.Errorf("%w: it skips %d rows of a %d-row page of %s", ErrBadContinuation, skip, len(page.Items), s.link)
	}
	s.raw, s.next, s.pos, s.loaded = page.Items, page.Continuation, skip, true
	s.done = page.Continuation == ""
	if p.plan.Kind == query.OrderBy {
		s.keys = make([][]any, len(s.raw))
		for i, row := range s.raw {
			kr := gjson.GetBytes(row, "k")
			keys, err := p.plan.SortKeys(map[string]any{"k": anyOf(kr)})
			if err != nil {
				return fmt.Errorf("router: %s: %w", s.link, err)
			}
			s.keys[i] = keys
		}
	}
	return nil
}

func anyOf(r gjson.Result) any {
	var v any
	if err := json.Unmarshal([]byte(r.Raw), &v); err != nil {
		return nil
	}
	return v
}

// fill fetches, in parallel, every source that has nothing buffered and is
// not finished. A failure fails the query, or with PartialResults marks the
// source failed.
func (p *Pager) fill(ctx context.Context, need func(*source) bool) error {
	var todo []*source
	for _, s := range p.srcs {
		if s.failed == nil && !s.available() && !(s.loaded && s.done) && need(s) {
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	sem := make(chan struct{}, parallelism(p.opts.MaxDegreeOfParallelism, len(todo)))
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, s := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = p.fetch(ctx, s)
			// Skipping into an empty next page: keep going until rows or end.
			for errs[i] == nil && !s.available() && !s.done {
				errs[i] = p.fetch(ctx, s)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		if ctx.Err() != nil || errors.Is(err, ErrBadContinuation) || !p.opts.PartialResults {
			return err
		}
		todo[i].failed = err
	}
	return nil
}

// emitter applies the client-side OFFSET and LIMIT.
func (p *Pager) take(page *QueryPage, item json.RawMessage) bool {
	if p.offLeft > 0 {
		p.offLeft--
		return true
	}
	if p.limLeft == 0 {
		return false
	}
	page.Items = append(page.Items, item)
	if p.limLeft > 0 {
		p.limLeft--
	}
	return true
}

func (p *Pager) nextStreamed(ctx context.Context) (*QueryPage, error) {
	page := &QueryPage{}
	if p.limLeft == 0 {
		return page, nil
	}
	if p.plan.Kind == query.OrderBy {
		if err := p.fill(ctx, func(*source) bool { return true }); err != nil {
			return nil, err
		}
		if p.heap == nil {
			p.heap = &sourceHeap{plan: p.plan}
			for _, s := range p.srcs {
				if s.available() {
					p.heap.srcs = append(p.heap.srcs, s)
				}
			}
			heap.Init(p.heap)
		}
		for len(page.Items) < p.opts.PageSize && p.limLeft != 0 && p.heap.Len() > 0 {
			s := p.heap.srcs[0]
			row := s.raw[s.pos]
			s.pos++
			if pr := gjson.GetBytes(row, "p"); pr.Exists() {
				if !p.take(page, json.RawMessage(pr.Raw)) {
					break
				}
			}
			if !s.available() && !s.done {
				if err := p.fill(ctx, func(x *source) bool { return x == s }); err != nil {
					return nil, err
				}
			}
			if s.available() {
				heap.Fix(p.heap, 0)
			} else {
				heap.Pop(p.heap)
			}
		}
	} else {
		for len(page.Items) < p.opts.PageSize && p.limLeft != 0 {
			if err := p.fill(ctx, func(*source) bool { return true }); err != nil {
				return nil, err
			}
			progressed := false
			for _, s := range p.srcs {
				for s.available() && len(page.Items) < p.opts.PageSize && p.limLeft != 0 {
					row := s.raw[s.pos]
					s.pos++
					progressed = true
					p.take(page, row)
				}
			}
			if !progressed {
				break
			}
		}
	}
	p.collectFailed(page)
	if !p.finished() {
		page.Continuation = p.token()
	}
	return page, nil
}

func (p *Pager) collectFailed(page *QueryPage) {
	for _, s := range p.srcs {
		if s.failed != nil {
			if page.Failed == nil {
				page.Failed = map[string]error{}
			}
			page.Failed[s.link] = s.failed
		}
	}
}

func (p *Pager) finished() bool {
	if p.limLeft == 0 {
		return true
	}
	for _, s := range p.srcs {
		if !s.exhausted() {
			return false
		}
	}
	return true
}

func (p *Pager) token() string {
	t := routerToken{V: 1, Hash: p.hash, Off: p.offLeft, Lim: p.limLeft}
	for _, s := range p.srcs {
		st := sourceToken{T: s.token, S: s.pos}
		switch {
		case s.failed != nil:
			st = sourceToken{D: true}
			t.Failed = append(t.Failed, s.link)
		case s.loaded && s.pos >= len(s.raw):
			if s.done {
				st = sourceToken{D: true}
			} else {
				st = sourceToken{T: s.next}
			}
		}
		t.Srcs = append(t.Srcs, st)
	}
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

// nextRecomputed computes the whole result once per pager (and again when
// resumed from a token in a new pager) and pages through it.
func (p *Pager) nextRecomputed(ctx context.Context) (*QueryPage, error) {
	page := &QueryPage{}
	if p.results == nil {
		parts := make([][]any, len(p.srcs))
		for {
			if err := p.fill(ctx, func(*source) bool { return true }); err != nil {
				return nil, err
			}
			progressed := false
			for i, s := range p.srcs {
				for s.available() {
					var v any
					if err := json.Unmarshal(s.raw[s.pos], &v); err != nil {
						return nil, fmt.Errorf("router: %s returned malformed JSON: %w", s.link, err)
					}
					parts[i] = append(parts[i], v)
					s.pos++
					progressed = true
				}
			}
			if !progressed {
				break
			}
		}
		res, err := p.plan.MergeAll(parts)
		if err != nil {
			return nil, fmt.Errorf("router: %w", err)
		}
		p.results = res
		if p.emitted > len(res) {
			return nil, fmt.Errorf("%w: position %d is past the %d results", ErrBadContinuation, p.emitted, len(res))
		}
	}
	end := min(p.emitted+p.opts.PageSize, len(p.results))
	for _, v := range p.results[p.emitted:end] {
		b, err := p.plan.Encode(v) // the property order one collection would give
		if err != nil {
			return nil, err
		}
		page.Items = append(page.Items, b)
	}
	p.emitted = end
	p.collectFailed(page)
	if end < len(p.results) {
		t := routerToken{V: 1, Hash: p.hash, Skip: end, Lim: -1}
		b, _ := json.Marshal(t)
		page.Continuation = base64.RawURLEncoding.EncodeToString(b)
	}
	return page, nil
}

// sourceHeap orders sources by their head row's sort keys, ties by
// collection index, so the merge is deterministic and resumable.
type sourceHeap struct {
	plan *query.Plan
	srcs []*source
}

func (h *sourceHeap) Len() int { return len(h.srcs) }
func (h *sourceHeap) Less(i, j int) bool {
	a, b := h.srcs[i], h.srcs[j]
	if c := h.plan.CompareKeys(a.keys[a.pos], b.keys[b.pos]); c != 0 {
		return c < 0
	}
	return a.idx < b.idx
}
func (h *sourceHeap) Swap(i, j int) { h.srcs[i], h.srcs[j] = h.srcs[j], h.srcs[i] }
func (h *sourceHeap) Push(x any)    { h.srcs = append(h.srcs, x.(*source)) }
func (h *sourceHeap) Pop() any {
	s := h.srcs[len(h.srcs)-1]
	h.srcs = h.srcs[:len(h.srcs)-1]
	return s
}

// BufferedRows returns how many rows the pager holds from its collections
// right now (for streamed shapes at most MaxBufferedItemCount, rounded up to
// one page per collection). It is for monitoring memory.
func (p *Pager) BufferedRows() int {
	n := 0
	for _, s := range p.srcs {
		n += len(s.raw) - s.pos
	}
	return n + len(p.results) - min(p.emitted, len(p.results))
}
