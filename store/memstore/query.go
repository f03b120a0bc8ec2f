package memstore

import (
	"cmp"
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// feedToken is a read-feed continuation: the collection incarnation and
// the last position returned.
type feedToken struct {
	V   int    `json:"v"`
	UID string `json:"u"`
	Seq uint64 `json:"s"`
}

const tokenVersion = 1

// Query runs Cosmos DB SQL over one collection with package query; see
// store.Querier.
//
// Every page of a query reads one snapshot of the collection (the
// documents that exist and have not expired, in feed order; with a
// partition key, only those with that key), taken by its first page, so a
// paged query sees one consistent state while its cursor is kept. What its
// cursor keeps between pages depends on the query's shape (see resultSet
// and localquery.Split):
//   - a query in feed order (rows from single documents: filters,
//     projections, JOINs; no ORDER BY, aggregate, GROUP BY or DISTINCT;
//     TOP, OFFSET and LIMIT allowed) is read as its scan goes: a page runs
//     the query over only as many documents as it needs;
//   - an ORDER BY query whose rows are its documents (no JOIN, FROM x IN,
//     DISTINCT or GROUP BY), and whose results may not fit the first page
//     (its TOP or LIMIT, if any, exceeds the page size), is sorted without
//     being projected: the cursor keeps the sorted positions, 4 bytes a
//     result, and each page projects its own documents;
//   - any other query runs whole on the first page and its cursor keeps
//     the results.
//
// Results, pages and tokens are the same whichever way. A cursor keeps its
// snapshot alive, documents replaced since included. A token whose cursor
// is gone (evicted, Options.Cursors; or the store restarted) resumes by
// position, never at an offset into a re-run (see resume): the first two
// shapes after the last row's document (and, for ORDER BY, its sort
// values), so documents deleted or created since cannot make the walk skip
// or repeat one that existed throughout; any other re-runs only over the
// same state of the collection and is otherwise refused, wrapping
// store.ErrBadRequest. Compiled queries are cached by text (parameters are
// bound per run). Documents are decoded on the first query that reads them
// and kept decoded (the first query after many writes pays for decoding
// them, spread over GOMAXPROCS goroutines); a query scoped to a key
// decodes only the key's documents, and one that does not read documents
// (query.Program.ReadsDocuments) decodes none.
// Tokens are bound to the collection, text, parameters and key: another
// query's token is an error wrapping store.ErrBadRequest.
func (s *Store) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	const op = "query"
	o := opt.Of(opts)
	c, pk, scoped, err := s.scoped(ctx, op, l, o.PartitionKey)
	if err != nil {
		return nil, err
	}
	call, err := localquery.Begin(op, l, q, c.uid, pk, o.Continuation)
	if err != nil {
		return nil, err
	}
	tok := call.Token
	start := tok.O
	results, cached := s.cursors.Get(tok.C, tok.Hash)
	if !cached {
		pl, err := s.progs.prepare(q.Text, call.Params)
		if err != nil {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
		}
		if o.Continuation == "" {
			results, err = s.run(ctx, c, pl, scoped, pk, pageSize(o.PageSize, s.opts.PageSize, -1))
		} else {
			results, start, err = s.resume(ctx, op, l, c, pl, scoped, pk, tok, pageSize(o.PageSize, s.opts.PageSize, -1))
		}
		if err != nil {
			return nil, localquery.RunErr(op, l, err)
		}
	}
	items, more, at, err := results.next(ctx, start, o.PageSize, s.opts.PageSize, s.opts.MaxPageBytes, tok.P)
	if err != nil {
		return nil, localquery.RunErr(op, l, err)
	}
	page := &store.Page{Items: items}
	if more {
		id := tok.C
		if !cached {
			id = s.cursors.Put(tok.Hash, results)
		}
		end := start + len(items)
		page.Continuation = tok.Next(id, end, localquery.Place{P: at, Left: results.left(end), State: results.state})
	}
	return page, nil
}

// scoped finds an open collection and the key text of the partition-key
// value a read is scoped to (scoped is false when key is nil): of a
// hierarchical key, the full key or a prefix (see givenKey).
func (s *Store) scoped(ctx context.Context, op, l string, key any) (c *collection, pk string, scoped bool, err error) {
	if c, err = s.collection(ctx, op, l); err != nil {
		return nil, "", false, err
	}
	if pk, scoped, err = c.givenKey(op, l, "", key, true); err != nil {
		return nil, "", false, err
	}
	return c, pk, scoped, nil
}

// run starts a plan over c's current snapshot: as a stream, lazily
// (positions of the sorted documents), or else every result as JSON, as
// the plan allows (see Query). A sorted query is read lazily only when its
// results may not fit the first page (size, -1 for all): otherwise every
// result is projected at once anyway, and running the query whole is
// cheaper than sorting positions first.
func (s *Store) run(ctx context.Context, c *collection, pl *plan, scoped bool, pk string, size int) (*resultSet, error) {
	now := s.clock().Unix()
	s.purge(c, now)
	sn := c.snapshot()
	sc := newScope(now, scoped, pk)
	if pl.kind == localquery.Feed {
		return &resultSet{stream: newStream(pl, sn, sc, 0, 0, pl.offset, pl.limit)}, nil
	}
	if err := sc.decodeAll(sn, pl.prog.ReadsDocuments()); err != nil {
		return nil, err
	}
	docs := sc.docs(sn.items)
	if most := pl.prog.MaxResults(); pl.kind == localquery.Sorted && size >= 0 && (most < 0 || most > size) {
		rs, ok, err := runLazy(ctx, sn, pl, pl.keys, docs)
		if err != nil || ok {
			return rs, err
		}
	}
	rows, err := pl.prog.Execute(ctx, docs)
	if err != nil {
		return nil, err
	}
	return &resultSet{rows: rows, limit: -1, state: s.state(sn)}, nil
}

// state names the state of the collection a snapshot holds, for results
// without positions: the store's process (its ETag prefix, random per
// process) and the snapshot's version, which every write and expiry
// purged changes.
func (s *Store) state(sn *snapshot) string {
	return s.etagPfx + ":" + strconv.FormatUint(sn.version, 10)
}

// decodeAll decodes the snapshot's documents in scope, when the query
// reads them and they are not all decoded yet.
func (sc *scope) decodeAll(sn *snapshot, reads bool) error {
	if !reads || sn.allDecoded.Load() {
		return nil
	}
	if err := sc.decode(sn.items); err != nil {
		return err
	}
	if !sc.scoped {
		sn.allDecoded.Store(true) // later queries skip the pass
	}
	return nil
}

// resume re-runs a query whose cursor is gone over c's current snapshot,
// from where its token says the last page stopped (tok.P), never at an
// offset into the new results: a Feed query starts after the document of
// its last row (past the rows of that document already returned), a
// Sorted one strictly after its last row's sort values and document; each
// takes only what its TOP or LIMIT still allows (tok.L). A query whose
// results have no positions (localquery.Whole) re-runs whole only over
// the same state of the collection (tok.W), where its offset is exact
// (start: tok.O); otherwise it is refused (localquery.Restart).
func (s *Store) resume(ctx context.Context, op, l string, c *collection, pl *plan, scoped bool, pk string, tok localquery.Token, size int) (rs *resultSet, start int, err error) {
	if tok.P == nil {
		now := s.clock().Unix()
		s.purge(c, now)
		if tok.W == "" || tok.W != s.state(c.snapshot()) {
			return nil, 0, localquery.Restart(op, l)
		}
		rs, err := s.run(ctx, c, pl, scoped, pk, size)
		if err == nil && rs.state != tok.W {
			err = localquery.Restart(op, l) // written to in between
		}
		return rs, tok.O, err
	}
	if pl.kind == localquery.Whole {
		return nil, 0, localquery.BadToken(op, l, tok.P.Doc, "a position for a query that has none")
	}
	rs, err = s.resumeAt(ctx, op, l, c, pl, scoped, pk, tok)
	return rs, 0, err
}

// resumeAt re-runs a Feed or Sorted query from its token's position.
func (s *Store) resumeAt(ctx context.Context, op, l string, c *collection, pl *plan, scoped bool, pk string, tok localquery.Token) (*resultSet, error) {
	seq, err := strconv.ParseUint(tok.P.Doc, 10, 64)
	if err != nil {
		return nil, localquery.BadToken(op, l, tok.P.Doc, "its position is not one of this store's")
	}
	now := s.clock().Unix()
	s.purge(c, now)
	sn := c.snapshot()
	sc := newScope(now, scoped, pk)
	left := tok.Left()
	if pl.kind == localquery.Feed {
		i := sort.Search(len(sn.items), func(i int) bool { return sn.items[i].e.seq >= seq })
		rows := 0
		if i < len(sn.items) && sn.items[i].e.seq == seq {
			rows = tok.P.Rows
		}
		return &resultSet{stream: newStream(pl, sn, sc, i, rows, 0, left)}, nil
	}
	after, err := localquery.SortedAfter(tok.P, pl.desc, func(a, b string) int {
		x, _ := strconv.ParseUint(a, 10, 64)
		y, _ := strconv.ParseUint(b, 10, 64)
		return cmp.Compare(x, y)
	})
	if err != nil {
		return nil, localquery.BadToken(op, l, string(tok.P.Keys), err.Error())
	}
	if err := sc.decodeAll(sn, true); err != nil {
		return nil, err
	}
	rs, ok, err := runLazy(ctx, sn, pl, pl.keysAll, sc.docs(sn.items))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, localquery.Restart(op, l)
	}
	// The first result strictly after the position: the results are in
	// (sort values, feed order) order, so a binary search finds it.
	var searchErr error
	i := sort.Search(len(rs.pos), func(i int) bool {
		if searchErr != nil {
			return true
		}
		it := &sn.items[rs.pos[i]]
		v, err := pl.sortKey.Values(ctx, docsAt(sn.items, rs.pos[i:i+1]))
		if err != nil || len(v) != 1 {
			searchErr = errors.Join(err, errors.New("memstore: internal error: a document's sort values are not one value"))
			return true
		}
		keys, err := localquery.UnwrapKeys(v[0])
		if err != nil {
			searchErr = err
			return true
		}
		return after(keys, strconv.FormatUint(it.e.seq, 10))
	})
	if searchErr != nil {
		return nil, searchErr
	}
	rs.pos, rs.limit = rs.pos[i:], left
	if left >= 0 && left < len(rs.pos) {
		rs.pos = rs.pos[:left]
	}
	return rs, nil
}

// scope says which documents of a snapshot a query reads: those not
// expired at now, and with a key, only those with that key (or, for a
// prefix of a hierarchical key, with a key that starts with it).
type scope struct {
	now    int64
	scoped bool
	prefix bool // pk is a prefix's text (partitionkey.CompositePrefix)
	pk     string
	pkHash uint64
}

// newScope returns the scope of documents live at now, with the key text
// pk when scoped. A text ending in a comma is a prefix of a hierarchical
// key (no full key's text ends so).
func newScope(now int64, scoped bool, pk string) scope {
	return scope{now: now, scoped: scoped, prefix: scoped && strings.HasSuffix(pk, ","), pk: pk, pkHash: keyHash(pk)}
}

// keyIn reports whether an entry's key (its text and keyHash) is the
// scope's key, or starts with its prefix.
func (sc *scope) keyIn(pkHash uint64, pk string) bool {
	if sc.prefix {
		return strings.HasPrefix(pk, sc.pk)
	}
	return pkHash == sc.pkHash && pk == sc.pk
}

// hasKey reports whether it is in a scoped query's scope: not expired,
// with the key.
func (sc *scope) hasKey(it *snapItem) bool {
	if sc.prefix {
		return it.expireAt > sc.now && strings.HasPrefix(it.e.pk, sc.pk)
	}
	return it.pkHash == sc.pkHash && it.expireAt > sc.now && it.e.pk == sc.pk
}

// docs returns the documents of items in scope, in order: decoded ones
// as they are, the others as query.RawDocs, which a query that reads them
// decodes again on every run (so queries that read documents decode them
// first: scope.decode).
func (sc scope) docs(items []snapItem) func(func(query.Doc) bool) {
	return func(yield func(query.Doc) bool) {
		if !sc.scoped {
			for i := range items {
				if it := &items[i]; it.expireAt > sc.now && !yield(it.doc()) {
					return
				}
			}
			return
		}
		for i := range items {
			if it := &items[i]; sc.hasKey(it) && !yield(it.doc()) {
				return
			}
		}
	}
}

// doc is the item's document as the engine reads it: decoded if a query
// has decoded it, else a query.RawDoc.
func (it *snapItem) doc() query.Doc {
	if d := it.decoded.Load(); d != nil {
		return *d
	}
	return query.RawDoc(it.e.body)
}

// in reports whether it is in scope.
func (sc *scope) in(it *snapItem) bool {
	if sc.scoped {
		return sc.hasKey(it)
	}
	return it.expireAt > sc.now
}

// snapshot returns the collection's current snapshot, building it when the
// collection has changed since the last one. Concurrent queries may build
// one each; the newest is kept. It decodes nothing.
func (c *collection) snapshot() *snapshot {
	if sn := c.snap.Load(); sn != nil && sn.version == c.version.Load() {
		return sn
	}
	c.mu.RLock()
	v := c.version.Load()
	sn := &snapshot{version: v, items: make([]snapItem, 0, len(c.order)-c.dead)}
	for _, e := range c.order {
		if e.dead {
			continue
		}
		sn.items = append(sn.items, snapItem{e: e, expireAt: e.expireAt, pkHash: e.pkHash})
		if d := e.doc.Load(); d != nil {
			sn.items[len(sn.items)-1].decoded.Store(d)
		}
	}
	c.mu.RUnlock()
	for {
		cur := c.snap.Load()
		if cur != nil && cur.version >= v || c.snap.CompareAndSwap(cur, sn) {
			return sn
		}
	}
}

// decode decodes the documents of items in sc's scope that no query has
// read yet: a document is decoded once, by the first query that reads it,
// and kept decoded beside its text. Many are decoded in parallel, spread
// over GOMAXPROCS goroutines.
func (sc *scope) decode(items []snapItem) error {
	var missing []*snapItem
	for i := range items {
		if it := &items[i]; it.decoded.Load() == nil && sc.in(it) {
			missing = append(missing, it)
		}
	}
	return decodeAll(missing)
}

// decodeAll decodes snapshot items, in parallel when there are many.
func decodeAll(its []*snapItem) error {
	return inParallel(len(its), 256, func(lo, hi int) error {
		for _, it := range its[lo:hi] {
			d, err := it.e.decoded()
			if err != nil {
				return err
			}
			it.decoded.Store(d)
		}
		return nil
	})
}

// ReadFeed walks a collection in feed order; see store.Feeder. The order
// is the order of creation: a replace keeps a document's place, a document
// deleted and created again is a new document at the end. The
// continuation is the last position returned, so a walk resumed from it
// returns every document that existed throughout exactly once, however
// the collection changes in between; documents created during the walk
// come at the end, where the walk may or may not reach them. A page costs
// a binary search and its own items, under the collection's read lock.
func (s *Store) ReadFeed(ctx context.Context, l string, opts *store.FeedOptions) (*store.Page, error) {
	const op = "read feed"
	c, err := s.collection(ctx, op, l)
	if err != nil {
		return nil, err
	}
	o := opt.Of(opts)
	var tok feedToken
	if o.Continuation == "" {
		tok = feedToken{V: tokenVersion, UID: c.uid}
	} else {
		if err := cursor.Decode(o.Continuation, &tok); err != nil || tok.V != tokenVersion {
			return nil, localquery.BadToken(op, l, o.Continuation, "malformed")
		}
		if tok.UID != c.uid {
			return nil, localquery.BadToken(op, l, o.Continuation, "issued for another collection (or one deleted since)")
		}
	}
	size := o.PageSize
	if size <= 0 {
		size = s.opts.PageSize
	}
	now := s.clock().Unix()
	s.purge(c, now)
	page := &store.Page{}
	bytes := 0
	c.mu.RLock()
	defer c.mu.RUnlock()
	i := sort.Search(len(c.order), func(i int) bool { return c.order[i].seq > tok.Seq })
	last := tok.Seq
	for ; i < len(c.order) && len(page.Items) < size; i++ {
		e := c.order[i]
		if e.dead || e.expireAt <= now {
			continue
		}
		if bytes += len(e.body); bytes > s.opts.MaxPageBytes && len(page.Items) > 0 {
			break
		}
		page.Items = append(page.Items, e.body)
		last = e.seq
	}
	for ; i < len(c.order); i++ {
		if e := c.order[i]; !e.dead && e.expireAt > now {
			tok.Seq = last
			page.Continuation = cursor.Encode(tok)
			break
		}
	}
	return page, nil
}
