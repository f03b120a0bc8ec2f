package router

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

// ChangeOptions qualify a read of a database's change feed (Changes). A
// nil *ChangeOptions means from the beginning, 1,000 documents a
// collection.
type ChangeOptions struct {
	// Continuation resumes after the page that returned it, in this
	// process or another. Empty means from the beginning of every
	// collection (every document, each once) unless FromNow is set.
	Continuation string
	// FromNow starts at the present: the page is empty and its
	// Continuation returns only what is written after this call. Ignored
	// when Continuation is set.
	FromNow bool
	// PageSize is the most documents a page takes from each collection's
	// feed (a page holds at most that many times the collections read); 0
	// means 1,000.
	PageSize int
}

// ChangePage is one page of a database's change feed.
type ChangePage struct {
	// Items are the changed documents, each the whole JSON text as stored
	// (system properties included). A document's changes come in the
	// order they were made; see Changes. Callers must not modify them.
	Items []json.RawMessage
	// Continuation is the position after this page; never empty. Pass it
	// to the next call (ChangeOptions.Continuation).
	Continuation string
	// CaughtUp says every collection's feed was read to its present
	// during the call: polling again returns only newer writes.
	CaughtUp bool
	// RequestCharge is the cost the store reports (Cosmos DB request
	// units), summed over the call's reads.
	RequestCharge float64
}

// Errors of the change feed.
var (
	// ErrNoChangeFeed: the store has no change feed (store.ChangeFeeder).
	ErrNoChangeFeed = errors.New("router: the store has no change feed")
)

// defaultChangePage is a page's share of each collection's feed when
// ChangeOptions.PageSize is 0.
const defaultChangePage = 1000

// maxViewRetries bounds the reads a call makes again when the database's
// placement changed while it read (see Changes).
const maxViewRetries = 3

// Changes reads one page of a database's change feed: the feeds of every
// collection its resolver names, merged, with one continuation token
// holding each collection's position (keyed by collection link). It reads
// each feed with store.ChangeFeedOptions.HideReshard, so a reshard
// (package transition) is invisible: its copies are not reported and its
// clean-up is not a deletion. The feed goes by the database's shared state
// when the store holds one (whether or not the client follows it, and
// without a lease), else by the registered resolver: collections a new
// resolver names
// join the feed from their beginning (spillover's as they open, a
// reshard's targets), and collections it no longer names are read to
// their end and then left.
//
// Guarantees (docs/design.md, "The database's change feed"): every
// acknowledged create, replace and upsert appears, at its latest version
// (a document written several times between two reads may appear once, as
// each collection's feed is in Cosmos DB's latest-version mode); a
// document's versions appear in the order they were written, across a
// reshard too: after a change of placement (a new epoch in the shared
// state) every collection is read to its present before any is read
// further, the collections keys leave before those they join. Deletions do
// not appear (latest-version mode). On Cosmos DB, which cannot mark a
// reshard's writes, its copies appear again, with the content the
// consumer has already seen.
//
// Cost: one point read of the shared state after the reads (the client
// keeps the view it read by; one more before the reads when it has none
// that fits the token, and a query of the state's history when versions
// passed since the token; a page read while the placement changed is read
// again); then one change-feed read per collection, several at once when
// the store is remote, and while a collection is behind a change of
// placement, one after another until the page holds PageSize documents
// (a collection so read to its present is not read again in the call).
// A continuation this client returned last is not decoded again. FromNow
// without a token costs one change-feed read per collection named now,
// however long the state's history.
func (c *Client) Changes(ctx context.Context, dbLink string, opts *ChangeOptions) (*ChangePage, error) {
	e, err := c.entry(dbLink)
	if err != nil {
		return nil, err
	}
	cf, ok := c.caps.(store.ChangeFeeder)
	if !ok {
		return nil, ErrNoChangeFeed
	}
	var o ChangeOptions
	if opts != nil {
		o = *opts
	}
	if o.PageSize < 0 {
		return nil, fmt.Errorf("router: change feed of %s: PageSize %d: want 0 (the default) or more", e.link, o.PageSize)
	}
	if o.PageSize == 0 {
		o.PageSize = defaultChangePage
	}
	bind := changeBinding(e.link)
	var start feedToken
	if o.Continuation != "" {
		t, err := c.feedTokenOf(e.link, o.Continuation, bind)
		if err != nil {
			return nil, err
		}
		start = *t
	}
	fromNow := o.Continuation == "" && o.FromNow
	since := start.ver
	if fromNow {
		// Only the collections named now: nothing is written after now
		// where the state's past versions alone sent writes.
		since = math.MaxInt64
	}
	for try := range maxViewRetries {
		// The view the client kept, unless it is stale for the token:
		// the state's ETag read after the reads tells whether it was
		// current throughout (one state read a call, not two).
		v, kept := c.keptView(e.link, since), true
		if v == nil || try > 0 {
			kept = false
			if v, err = c.feedView(ctx, e, since); err != nil {
				return nil, err
			}
		}
		tok := start.clone()
		fr := &feedRead{c: c, cf: cf, v: v, o: o, tok: &tok}
		if fromNow {
			err = fr.fromNow(ctx)
		} else {
			err = fr.read(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("router: change feed of %s: %w", e.link, err)
		}
		after, err := c.feedView(ctx, e, math.MaxInt64)
		if err != nil {
			return nil, err
		}
		if kept && after.etag != v.etag || after.epoch != v.epoch || !slices.Equal(after.links, v.links) {
			continue // the placement changed under the reads: read again by the new one
		}
		tok.ver = v.version
		fr.page.Continuation = c.issue(e.link, tok, bind)
		return &fr.page, nil
	}
	// The placement kept changing: report no progress; the caller polls.
	cont := o.Continuation
	if cont == "" {
		cont = start.encode(bind)
	}
	return &ChangePage{Continuation: cont}, nil
}

// feedView is what a change-feed read goes by: the placement's epoch (0
// for a database registered with Register) and the collections the
// resolver names, sorted, each with its rank in the order collections
// are caught up after a change of placement.
type feedView struct {
	epoch   int64
	version int64  // the shared state's version (0: none)
	etag    string // the state document's ETag ("": none)
	links   []string
	extra   []string // named since the token's version, no longer
	rank    map[string]int
}

// Ranks of collections in catching up after a change of placement: keys
// leave the collections of lower rank for those of higher rank.
const (
	rankLeft    = iota // no longer named: read to the end first
	rankCurrent        // named by a transition's current placement alone
	rankBoth           // named by both placements, or by a resolver outside a transition
	rankNext           // named by a transition's next placement alone
)

// transitional is what Changes needs of a transition resolver (package
// transition), which this package cannot import.
type transitional interface {
	Current() resolver.Target
	Next() resolver.Target
}

// feedView loads the view a read goes by. Collections that versions of
// the shared state after since named (a reshard's or spillover's that came
// and went since the token's last read) and the current one does not are
// in extra, to be read to their end as left ones; since = math.MaxInt64
// loads the current version alone. A view is immutable once made: the
// client keeps the last one per database (Client.feedViews) and, while
// the state document's ETag is unchanged, a call costs one point read.
func (c *Client) feedView(ctx context.Context, e *dbEntry, since int64) (*feedView, error) {
	etag, err := shardstate.ETag(ctx, c.st, e.link)
	switch {
	case errors.Is(err, shardstate.ErrNoState):
		return c.loadView(ctx, e, since)
	case err != nil:
		return nil, fmt.Errorf("router: change feed of %s: %w", e.link, err)
	}
	if v := c.keptView(e.link, since); v != nil && v.etag == etag {
		return v, nil // the state is unchanged, and nothing came and went since the token
	}
	v, err := c.loadView(ctx, e, since)
	if err == nil && v.etag != "" && len(v.extra) == 0 {
		c.feedViews.Store(e.link, v)
	}
	return v, err
}

// keptView returns the view the client kept for the database when nothing
// came and went since the token's version (since), else nil. It reads
// nothing: whether the view is still current is the caller's to check.
func (c *Client) keptView(link string, since int64) *feedView {
	if v, ok := c.feedViews.Load(link); ok {
		if v := v.(*feedView); since >= v.version-1 {
			return v
		}
	}
	return nil
}

// issuedToken is the last continuation a client returned for a database's
// feed, and what it holds: a consumer passes it back on its next call,
// which then needs no decoding.
type issuedToken struct {
	text string
	tok  feedToken // never modified (Changes reads a clone)
}

// feedTokenOf decodes a change-feed continuation of the database at link,
// or takes the last one this client issued for it.
func (c *Client) feedTokenOf(link, text string, bind [8]byte) (*feedToken, error) {
	if t, ok := c.feedTokens.Load(link); ok {
		if t := t.(*issuedToken); t.text == text {
			return &t.tok, nil
		}
	}
	return decodeFeedToken(text, bind)
}

// issue returns tok's text and keeps it as the last token issued for the
// database: a poll at the present, whose positions did not move, returns
// the text it was given without writing it again.
func (c *Client) issue(link string, tok feedToken, bind [8]byte) string {
	if t, ok := c.feedTokens.Load(link); ok {
		if t := t.(*issuedToken); t.tok.ver == tok.ver && slices.Equal(t.tok.colls, tok.colls) {
			return t.text
		}
	}
	text := tok.encode(bind)
	c.feedTokens.Store(link, &issuedToken{text: text, tok: tok})
	return text
}

// loadView is feedView past its cache: the state and its history since,
// read and decoded.
func (c *Client) loadView(ctx context.Context, e *dbEntry, since int64) (*feedView, error) {
	r, epoch, version, etag := e.r, int64(0), int64(0), ""
	var past []resolver.Resolver
	hist, err := shardstate.HistorySince(ctx, c.st, e.link, since)
	switch {
	case errors.Is(err, shardstate.ErrNoState):
	case err != nil:
		return nil, fmt.Errorf("router: change feed of %s: %w", e.link, err)
	default:
		s := hist[len(hist)-1]
		epoch, version, etag = s.Epoch, s.Version, s.ETag
		if e.follow == nil || s.Version != e.version.Load() {
			if r, err = s.DecodeDocument(); err != nil {
				return nil, fmt.Errorf("router: change feed of %s: %w", e.link, err)
			}
		}
		for _, h := range hist[:len(hist)-1] {
			pr, err := h.Decode()
			if err != nil {
				return nil, fmt.Errorf("router: change feed of %s: version %d: %w", e.link, h.Version, err)
			}
			past = append(past, pr)
		}
	}
	v := &feedView{epoch: epoch, version: version, etag: etag, rank: map[string]int{}}
	if err := rankLinks(v.rank, r); err != nil {
		return nil, fmt.Errorf("router: change feed of %s: %w", e.link, err)
	}
	for l := range v.rank {
		v.links = append(v.links, l)
	}
	slices.Sort(v.links)
	gone := map[string]int{}
	for _, pr := range past {
		if err := rankLinks(gone, pr); err != nil {
			return nil, fmt.Errorf("router: change feed of %s: %w", e.link, err)
		}
	}
	for l := range gone {
		if _, ok := v.rank[l]; !ok {
			v.extra = append(v.extra, l)
		}
	}
	slices.Sort(v.extra)
	return v, nil
}

// rankLinks puts the collections r names in rank, each with its rank in
// catching up (rankCurrent, rankBoth, rankNext).
func rankLinks(rank map[string]int, r resolver.Resolver) error {
	if t, ok := r.(transitional); ok {
		for _, l := range t.Current().Links() {
			rank[l] = rankCurrent
		}
		for _, l := range t.Next().Links() {
			if rank[l] == rankCurrent {
				rank[l] = rankBoth
			} else {
				rank[l] = rankNext
			}
		}
		return nil
	}
	links, err := r.ResolveForRead(nil)
	if err != nil {
		return err
	}
	for _, l := range links {
		rank[l] = rankBoth
	}
	return nil
}

// feedRead is one call of Changes: the view it reads by, the token it
// advances, the page it fills.
type feedRead struct {
	c    *Client
	cf   store.ChangeFeeder
	v    *feedView
	o    ChangeOptions
	tok  *feedToken
	page ChangePage
	// present are the collections drain read to their present in this
	// call: readAll does not read them again.
	present []string
}

// join adds the collections the view names and the token lacks, from
// their beginning.
func (fr *feedRead) join() {
	n := len(fr.tok.colls)
	for _, ls := range [2][]string{fr.v.links, fr.v.extra} {
		for _, l := range ls {
			if fr.tok.find(l) < 0 {
				fr.tok.colls = append(fr.tok.colls, feedPos{link: l, joined: fr.v.epoch})
			}
		}
	}
	if len(fr.tok.colls) > n {
		slices.SortFunc(fr.tok.colls, func(a, b feedPos) int { return cmp.Compare(a.link, b.link) })
	}
}

// fromNow positions every collection at its present.
func (fr *feedRead) fromNow(ctx context.Context) error {
	fr.join()
	for i := range fr.tok.colls {
		p := &fr.tok.colls[i]
		pg, err := fr.cf.ReadChanges(ctx, p.link, &store.ChangeFeedOptions{FromNow: true, HideReshard: true})
		if errors.Is(err, store.ErrCollectionNotFound) {
			continue // not created yet: from its beginning once it is
		}
		if err != nil {
			return err
		}
		fr.page.RequestCharge += pg.RequestCharge
		p.tok, p.caught = pg.Continuation, fr.v.epoch
	}
	fr.page.CaughtUp = true
	return nil
}

// read fills the page: first, while some collection has not been read to
// its present since the placement's epoch, those collections one after
// another in rank order (so a document's version in the collection it
// left comes before its versions where it went); then every collection
// once, at once.
func (fr *feedRead) read(ctx context.Context) error {
	fr.join()
	behind := fr.behind()
	for _, i := range behind {
		full, err := fr.drain(ctx, i)
		if err != nil || full {
			return err
		}
	}
	fr.dropLeft()
	return fr.readAll(ctx)
}

// behind returns the indexes of the collections not read to their present
// since the view's epoch, in the order they are caught up: rank, then the
// epoch they joined at, then link.
func (fr *feedRead) behind() []int {
	var out []int
	for i, p := range fr.tok.colls {
		if p.caught < fr.v.epoch || fr.rankOf(p.link) == rankLeft {
			out = append(out, i)
		}
	}
	slices.SortStableFunc(out, func(a, b int) int {
		pa, pb := fr.tok.colls[a], fr.tok.colls[b]
		return cmp.Or(cmp.Compare(fr.rankOf(pa.link), fr.rankOf(pb.link)), cmp.Compare(pa.joined, pb.joined))
	})
	return out
}

func (fr *feedRead) rankOf(l string) int {
	if r, ok := fr.v.rank[l]; ok {
		return r
	}
	return rankLeft
}

// drain reads collection i until it has caught up or the page is full
// (full: the caller stops there). Each read asks for what the page has
// left (as much as a page reading every collection holds): a call takes
// few, large store pages, the first one the answer's, uncopied, and a
// page of PageSize or more ends the call, so pages are seldom copied
// together.
func (fr *feedRead) drain(ctx context.Context, i int) (full bool, err error) {
	budget := fr.o.PageSize * len(fr.tok.colls)
	for {
		pg, err := fr.readPage(ctx, &fr.tok.colls[i], budget-len(fr.page.Items))
		if err != nil {
			return false, err
		}
		fr.add(pg)
		if len(pg.Items) == 0 {
			fr.present = append(fr.present, fr.tok.colls[i].link)
			return false, nil
		}
		if len(fr.page.Items) >= fr.o.PageSize {
			return true, nil
		}
	}
}

// readPage reads one page of the feed of the collection at p, at most size
// documents, and advances p: an empty page marks it caught up at the
// view's epoch. A collection that does not exist is caught up with nothing
// (a named one not created yet, a left one deleted): an empty page. It
// touches nothing but p, so several run at once on distinct positions.
func (fr *feedRead) readPage(ctx context.Context, p *feedPos, size int) (*store.ChangePage, error) {
	pg, err := fr.cf.ReadChanges(ctx, p.link, &store.ChangeFeedOptions{Continuation: p.tok, PageSize: size, HideReshard: true})
	if errors.Is(err, store.ErrCollectionNotFound) {
		p.tok, p.caught = "", fr.v.epoch
		return &store.ChangePage{}, nil
	}
	if err != nil {
		return nil, err
	}
	p.tok = pg.Continuation
	if len(pg.Items) == 0 {
		p.caught = fr.v.epoch
	}
	return pg, nil
}

// add puts a store page's documents and charge in the answer: the store's
// slice itself when the answer has none yet (the commonest case: no
// copy).
func (fr *feedRead) add(pg *store.ChangePage) {
	fr.page.RequestCharge += pg.RequestCharge
	if cap(fr.page.Items) == 0 {
		fr.page.Items = pg.Items
	} else {
		fr.page.Items = append(fr.page.Items, pg.Items...)
	}
}

// dropLeft removes the collections no longer named that have been read to
// their end.
func (fr *feedRead) dropLeft() {
	fr.tok.colls = slices.DeleteFunc(fr.tok.colls, func(p feedPos) bool {
		return fr.rankOf(p.link) == rankLeft && p.caught >= fr.v.epoch
	})
}

// readAll reads one page of every collection and appends them in link
// order; a collection drain read to its present in this call is not read
// again (its page is empty). The first is read on the calling goroutine;
// when that took long enough to be a round trip (a remote store), the
// rest are read several at once (MaxDegreeOfParallelism), else one after
// another (an in-process store answers faster than goroutines start).
func (fr *feedRead) readAll(ctx context.Context) error {
	colls := fr.tok.colls
	n := len(colls)
	pages := make([]*store.ChangePage, n)
	first, rest := -1, 0 // the first collection to read, and how many after it
	for i := range colls {
		switch {
		case slices.Contains(fr.present, colls[i].link):
			pages[i] = &noChanges
		case first < 0:
			first = i
		default:
			rest++
		}
	}
	if first < 0 { // none, or every one read to its present already
		fr.page.CaughtUp = true
		return nil
	}
	one := func(ctx context.Context, i int) (err error) {
		pages[i], err = fr.readPage(ctx, &colls[i], fr.o.PageSize)
		return err
	}
	start := time.Now()
	if err := one(ctx, first); err != nil {
		return err
	}
	if par := parallelism(fr.c.opts.MaxDegreeOfParallelism, rest); rest > 0 && par > 1 && time.Since(start) >= remoteRead {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(par)
		for i := first + 1; i < n; i++ {
			if pages[i] == nil {
				g.Go(func() error { return one(gctx, i) })
			}
		}
		if err := g.Wait(); err != nil {
			return err
		}
	} else {
		for i := first + 1; i < n; i++ {
			if pages[i] != nil {
				continue
			}
			if err := one(ctx, i); err != nil {
				return err
			}
		}
	}
	total, with := len(fr.page.Items), 0
	for _, pg := range pages {
		total += len(pg.Items)
		if len(pg.Items) > 0 {
			with++
		}
	}
	if with > 1 || with == 1 && len(fr.page.Items) > 0 {
		fr.page.Items = slices.Grow(fr.page.Items, total-len(fr.page.Items)) // one allocation for the whole page
	}
	for _, pg := range pages {
		fr.add(pg)
	}
	fr.page.CaughtUp = with == 0
	return nil
}

// noChanges is the page of a collection readAll does not read: empty.
// Never modified.
var noChanges store.ChangePage

// remoteRead is how long a change-feed read takes for readAll to take the
// store for a remote one and read the other collections at once.
const remoteRead = 500 * time.Microsecond

// feedToken is a database change feed's position: per collection (by
// link, sorted) the store's continuation (empty: the beginning), the
// epoch of the placement it was last read to its present under, and the
// epoch it joined the feed at.
type feedToken struct {
	colls []feedPos
	ver   int64 // the shared state's version the token was taken at
}

type feedPos struct {
	link   string
	tok    string
	caught int64
	joined int64
}

func (t feedToken) clone() feedToken { return feedToken{colls: slices.Clone(t.colls), ver: t.ver} }

func (t *feedToken) find(l string) int {
	i, ok := slices.BinarySearchFunc(t.colls, l, func(p feedPos, l string) int { return cmp.Compare(p.link, l) })
	if !ok {
		return -1
	}
	return i
}

// changeBinding binds a change-feed token to its database, in the
// router's token envelope (seal): the binding of a "query" no query can
// be.
func changeBinding(dbLink string) [8]byte {
	b, _ := binding(dbLink, store.Query{Text: "\x00changes"}, "")
	return b
}

// encode writes the token in the router's envelope (seal): a body of the
// number of collections, then per collection its link and store
// continuation (length, bytes) and its caught and joined epochs
// (uvarints); then the shared state's version (uvarint). The envelope's
// links hash is 0: the links are in the body.
func (t *feedToken) encode(bind [8]byte) string {
	size := (2 + 4*len(t.colls)) * binary.MaxVarintLen64
	for _, p := range t.colls {
		size += len(p.link) + len(p.tok)
	}
	body := make([]byte, 0, size) // one allocation: a token is written every page
	body = binary.AppendUvarint(body, uint64(len(t.colls)))
	for _, p := range t.colls {
		body = binary.AppendUvarint(body, uint64(len(p.link)))
		body = append(body, p.link...)
		body = binary.AppendUvarint(body, uint64(len(p.tok)))
		body = append(body, p.tok...)
		body = binary.AppendUvarint(body, uint64(p.caught))
		body = binary.AppendUvarint(body, uint64(p.joined))
	}
	body = binary.AppendUvarint(body, uint64(t.ver))
	flags := byte(0)
	if len(body) > 2048 { // many collections: a token costs a compression then
		body, flags = compress(body)
	}
	return seal(bind, 0, flags, body)
}

func decodeFeedToken(s string, bind [8]byte) (*feedToken, error) {
	body, err := unseal(s, bind, "database's change feed (or it is a query's)", func(lh uint32) error {
		if lh != 0 {
			return badToken("it is a query's token, not a change feed's")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	d := tokenReader{b: body}
	// Links and continuations are substrings of one copy of the body: one
	// allocation, not two a collection.
	text := string(body)
	str := func() string {
		n := d.int()
		at := len(body) - len(d.b)
		d.bytes(n)
		return text[at : len(body)-len(d.b)]
	}
	n := d.int()
	t := &feedToken{colls: make([]feedPos, 0, min(n, len(d.b)))}
	for i := 0; i < n && d.err == nil; i++ {
		p := feedPos{link: str()}
		p.tok = str()
		p.caught = int64(d.uint())
		p.joined = int64(d.uint())
		if len(t.colls) > 0 && t.colls[len(t.colls)-1].link >= p.link {
			d.fail()
		}
		t.colls = append(t.colls, p)
	}
	t.ver = int64(d.uint())
	if d.err != nil || len(d.b) != 0 {
		return nil, badToken("malformed change-feed state")
	}
	return t, nil
}
