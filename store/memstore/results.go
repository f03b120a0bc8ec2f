package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"sync"
	"unsafe"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/query"
)

// resultSet is what a query's cursor holds between pages, by the query's
// shape: every result as JSON (rows); for an ORDER BY query whose
// projection can wait, the sorted positions of the result documents in an
// immutable snapshot and the program that projects them, so a cursor over
// 100,000 sorted documents holds 100,000 int32s and each page projects
// only its own documents; or a stream, for a query read as its scan goes.
//
// Every result but a rows one knows where each result stands in the
// collection (see position), which a token carries so that a page whose
// cursor is gone resumes after it (see Store.resume).
type resultSet struct {
	rows []json.RawMessage

	sn      *snapshot // lazy: the snapshot the query ran on (never modified)
	pos     []int32   // lazy: result documents, as indexes into sn.items
	page    *query.Program
	sortKey *query.Program // lazy: a document's sort values, for positions
	// limit is how many results the query's TOP or LIMIT allows from the
	// set's first result on (-1: no bound): what a token says remains.
	limit int
	// state names the collection's state rows were computed over
	// (Store.state), for a re-run that must find it unchanged.
	state string

	stream *stream // a query read as its scan goes
}

// bytes estimates what the result set holds for its cursor: the rows'
// JSON, the positions, and a stream's rows held between pages (measured
// when the cursor is cached: a stream holds at most a run's rows).
func (r *resultSet) bytes() int64 {
	n := cursor.RowsSize(r.rows) + 4*int64(len(r.pos)) + 64
	if s := r.stream; s != nil {
		s.mu.Lock()
		n += cursor.RowsSize(s.held) + 8*int64(len(s.runAt)) + 4*int64(cap(s.pos)) + 24*streamMaxRun
		s.mu.Unlock()
	}
	return n
}

func (r *resultSet) len() int {
	if r.page != nil {
		return len(r.pos)
	}
	return len(r.rows)
}

// next returns the page starting at result start (see pageOf), whether
// results follow it and, when they do, where its last result stands in
// the collection (nil for rows, which have no positions; unchanged from
// at for an empty page).
func (r *resultSet) next(ctx context.Context, start, size, defSize, maxBytes int, at *localquery.Pos) ([]json.RawMessage, bool, *localquery.Pos, error) {
	if r.stream != nil {
		items, more, p, err := r.stream.page(ctx, start, pageSize(size, defSize, -1), maxBytes)
		if p == nil {
			p = at
		}
		return items, more, p, err
	}
	start = min(start, r.len())
	items, err := r.pageOf(ctx, start, size, defSize, maxBytes)
	more := start+len(items) < r.len()
	if err != nil || !more || len(items) == 0 || r.page == nil {
		if r.page == nil {
			at = nil
		}
		return items, more, at, err
	}
	p, err := r.position(ctx, start+len(items)-1)
	return items, more, p, err
}

// position returns where lazy result i stands: its sort values and its
// document.
func (r *resultSet) position(ctx context.Context, i int) (*localquery.Pos, error) {
	it := &r.sn.items[r.pos[i]]
	keys, err := r.sortKey.Execute(ctx, docsAt(r.sn.items, r.pos[i:i+1]))
	if err == nil && len(keys) != 1 {
		err = errors.New("memstore: internal error: a document's sort values are not one row")
	}
	if err != nil {
		return nil, err
	}
	return &localquery.Pos{Keys: keys[0], Doc: strconv.FormatUint(it.e.seq, 10)}, nil
}

// left returns how many results the query still allows after the first
// end results of the set (-1: no bound).
func (r *resultSet) left(end int) int {
	limit := r.limit
	if r.stream != nil {
		limit = r.stream.limit
	}
	if limit < 0 {
		return -1
	}
	return max(limit-end, 0)
}

// docsAt returns the documents at positions pos of items, in that order.
func docsAt(items []snapItem, pos []int32) func(func(query.Doc) bool) {
	return func(yield func(query.Doc) bool) {
		for _, p := range pos {
			if !yield(items[p].doc()) {
				return
			}
		}
	}
}

// pageSize resolves a requested page size: the default for 0, unbounded
// (all) for -1.
func pageSize(size, defSize, all int) int {
	switch {
	case size == 0:
		return defSize
	case size < 0:
		return all
	}
	return size
}

// pageOf returns the page starting at start: at most size results (the
// store's default for 0, unbounded for -1), ended early by maxBytes (the
// total of the results' JSON sizes), and always at least one result.
// Lazily held results are projected here, in chunks of 512 documents
// and more, so a page of n results projects at most n documents, and at
// most a chunk more when the byte cap ends it.
func (r *resultSet) pageOf(ctx context.Context, start, size, defSize, maxBytes int) ([]json.RawMessage, error) {
	n := r.len()
	size = pageSize(size, defSize, n)
	start = min(start, n)
	if r.page == nil {
		k, _, _ := take(r.rows[start:min(n, start+size)], 0, 0, maxBytes)
		return r.rows[start : start+k : start+k], nil
	}
	want := min(size, n-start)
	var out []json.RawMessage
	bytes, chunk := 0, 512
	for next := start; len(out) < want; {
		k := min(chunk, want-len(out))
		rows, err := r.project(ctx, r.pos[next:next+k])
		if err != nil {
			return nil, err
		}
		cut, b, _ := take(rows, len(out), bytes, maxBytes)
		bytes = b
		if out == nil && cut == want {
			return rows[:cut:cut], nil // the usual page: one chunk, not copied
		}
		if out == nil {
			out = make([]json.RawMessage, 0, min(want, 4096))
		}
		out = append(out, rows[:cut]...)
		if cut < k {
			break
		}
		next += k
		chunk = min(chunk*2, 4096)
	}
	return out, nil
}

// project runs the page program over the documents at pos, in order.
func (r *resultSet) project(ctx context.Context, pos []int32) ([]json.RawMessage, error) {
	rows, err := r.page.Execute(ctx, docsAt(r.sn.items, pos))
	if err == nil && len(rows) != len(pos) {
		err = errors.New("memstore: internal error: a lazily projected page lost rows")
	}
	return rows, err
}

// take returns how many of rows a page can still take: all of them,
// unless one carries the page's JSON past maxBytes — then those before it,
// but always one for an empty page. held and bytes are the page's rows so
// far and their size; bytes comes back updated, and full reports that the
// byte cap ended the page.
func take(rows []json.RawMessage, held, bytes, maxBytes int) (k, newBytes int, full bool) {
	for ; k < len(rows); k++ {
		if bytes += len(rows[k]); bytes > maxBytes && held+k > 0 {
			return k, bytes, true
		}
	}
	return k, bytes, false
}

// runLazy runs pl's keys program over the snapshot and returns the
// result documents' positions; ok is false when the engine's results
// cannot be mapped back to documents, and the caller runs the query
// whole instead.
func runLazy(ctx context.Context, sn *snapshot, pl *plan, keys *query.Program, docs func(func(query.Doc) bool)) (*resultSet, bool, error) {
	vals, err := keys.Values(ctx, docs)
	if err != nil {
		return nil, false, err
	}
	idx, rebuilt := sn.index(false), false
	pos := make([]int32, len(vals))
	for i, v := range vals {
		p, ok := idx[localquery.MapPointer(v)]
		if !ok && !rebuilt {
			idx, rebuilt = sn.index(true), true
			p, ok = idx[localquery.MapPointer(v)]
		}
		if !ok {
			return nil, false, nil
		}
		pos[i] = p
	}
	return &resultSet{sn: sn, pos: pos, page: pl.page, sortKey: pl.sortKey, limit: pl.prog.MaxResults()}, true, nil
}

// index maps each decoded document's map to its position in the
// snapshot; nil when two positions share a map (never expected; lazy
// projection is then off). It is built on first use and again when a
// lookup misses (documents decoded since by queries of other scopes), and
// costs a map entry per decoded document.
func (sn *snapshot) index(rebuild bool) map[unsafe.Pointer]int32 {
	if idx := sn.idx.Load(); idx != nil && !rebuild {
		return *idx
	}
	idx := make(map[unsafe.Pointer]int32, len(sn.items))
	for i := range sn.items {
		d := sn.items[i].decoded.Load()
		if d == nil {
			continue
		}
		p := localquery.MapPointer(d.Value())
		if _, dup := idx[p]; dup || p == nil {
			return nil
		}
		idx[p] = int32(i)
	}
	sn.idx.Store(&idx)
	return idx
}

// stream reads a Feed query (see localquery.Shape) page by page as it
// scans the snapshot, instead of running it over every document first: a
// page costs the documents it needs, and a cursor holds the snapshot, a
// position and the rows of the last run of documents that the page did
// not take. The snapshot never changes, so any offset can be found again
// exactly by scanning from the start: a page asked for at another offset
// than the cursor stands at (a retried or repeated token) rescans. Safe
// for concurrent use.
//
// A page that more results follow says where its last row stands (the
// document it came from, and that document's rows returned). A query
// whose documents give one row each at most runs whole over a run of
// documents; the document of a row is found only when a page ends inside
// the run, by running the query's filter over it (its documents are
// returned as the same maps, in order), once per run. Any other query
// (a JOIN, a source inside the document) runs a document at a time, each
// row known by its document: an engine run per document.
type stream struct {
	mu    sync.Mutex
	pl    *plan
	sn    *snapshot
	scope scope // the documents the query reads
	// begin is where the stream starts (a snapshot position), and
	// beginRows how many rows of that document a page returned before.
	begin, beginRows int
	offset, limit    int // the query's OFFSET (base rows passed over first) and TOP or LIMIT (-1: none)

	next   int               // the snapshot position of the next document to run
	held   []json.RawMessage // rows of the run not yet returned: the end of runRows
	skip   int               // OFFSET rows still to pass over
	served int               // the results returned so far: the offset held starts at
	run    int               // documents per run, growing
	pos    []int32           // scoped: the positions of the run's documents

	runFrom, runEnd int               // the last run: snapshot positions [runFrom, runEnd)
	runRows         []json.RawMessage // its rows
	runAt           []rowAt           // where each of its rows comes from (nil until needed)
}

// rowAt is where a row comes from: its document (a snapshot position) and
// its place among that document's rows.
type rowAt struct{ doc, ord int32 }

const (
	streamFirstRun = 128
	streamMaxRun   = 8192
)

// newStream starts a Feed query at snapshot position begin, past
// beginRows rows of that document, with its OFFSET still to pass over
// (offset) and limit results at most (-1: no bound).
func newStream(pl *plan, sn *snapshot, sc scope, begin, beginRows, offset, limit int) *stream {
	if pl.filter != nil && beginRows > 0 {
		begin, beginRows = begin+1, 0 // one row a document at most: that one was returned
	}
	s := &stream{pl: pl, sn: sn, scope: sc, begin: begin, beginRows: beginRows, offset: offset, limit: limit}
	s.reset()
	return s
}

func (s *stream) reset() {
	s.next, s.held, s.served, s.run, s.skip = s.begin, nil, 0, streamFirstRun, s.offset
	s.runRows, s.runAt = nil, nil
}

// page returns up to size results from offset start, ended early once
// their JSON passes maxBytes (always at least one result), whether more
// follow and, when they do, where the last one stands.
func (s *stream) page(ctx context.Context, start, size, maxBytes int) ([]json.RawMessage, bool, *localquery.Pos, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if start < s.served {
		s.reset()
	}
	for s.served < start { // skip to start
		if ok, err := s.ready(ctx); err != nil || !ok {
			return nil, false, nil, err
		}
		k := min(len(s.held), start-s.served)
		s.held, s.served = s.held[k:], s.served+k
	}
	if rem := max(s.limit-s.served, 0); s.limit >= 0 && (size < 0 || size > rem) {
		size = rem
	}
	if size < 0 {
		s.run = len(s.sn.items) // everything is wanted: one run
	}
	var out []json.RawMessage
	var runEnd *localquery.Pos // where out stands when its last row ended a run
	bytes := 0
	for size < 0 || len(out) < size {
		if len(s.held) == 0 && len(out) > 0 {
			runEnd = s.afterRun()
		}
		if ok, err := s.ready(ctx); err != nil {
			return nil, false, nil, err
		} else if !ok {
			break
		}
		room := s.held
		if size >= 0 {
			room = room[:min(len(room), size-len(out))]
		}
		k, b, full := take(room, len(out), bytes, maxBytes)
		bytes = b
		if out == nil {
			out = s.held[:k:k] // the usual page: one run, not copied
		} else {
			out = append(out, s.held[:k]...)
		}
		s.held = s.held[k:]
		if k > 0 {
			runEnd = nil
		}
		if full {
			break
		}
	}
	s.served += len(out)
	if len(out) == 0 || s.limit >= 0 && s.served >= s.limit {
		return out, false, nil, nil
	}
	// Where the last row stands, before a run further on is read.
	at := runEnd
	if at == nil {
		var err error
		if at, err = s.position(ctx); err != nil {
			return nil, false, nil, err
		}
	}
	// Say whether results follow only once one is there: a selective
	// filter may leave none in the rest of the snapshot.
	more, err := s.ready(ctx)
	if err != nil {
		return nil, false, nil, err
	}
	return out, more, at, nil
}

// position returns where the row last returned stands: a row of the
// current run.
func (s *stream) position(ctx context.Context) (*localquery.Pos, error) {
	i := len(s.runRows) - len(s.held) - 1 // the row's index in the run
	if len(s.held) == 0 {
		return s.afterRun(), nil
	}
	if s.runAt == nil {
		at, err := s.attribute(ctx)
		if err != nil {
			return nil, err
		}
		s.runAt = at
	}
	return s.posOf(s.runAt[i]), nil
}

// afterRun is the position after every row of the current run: past all
// rows of its last document.
func (s *stream) afterRun() *localquery.Pos {
	return &localquery.Pos{Doc: strconv.FormatUint(s.sn.items[s.runEnd-1].e.seq, 10), Rows: math.MaxInt32}
}

func (s *stream) posOf(at rowAt) *localquery.Pos {
	return &localquery.Pos{Doc: strconv.FormatUint(s.sn.items[at.doc].e.seq, 10), Rows: int(at.ord) + 1}
}

// ready runs the query over further documents until rows are held, and
// reports whether there are any (false: the snapshot is exhausted).
func (s *stream) ready(ctx context.Context) (bool, error) {
	for len(s.held) == 0 {
		if done, err := s.fill(ctx); err != nil || done {
			return false, err
		}
	}
	return true, nil
}

// fill runs the query over the next run of documents into held; done
// when the snapshot is exhausted.
func (s *stream) fill(ctx context.Context) (done bool, err error) {
	items, sc := s.sn.items, &s.scope
	if s.next >= len(items) {
		return true, nil
	}
	from, end := s.next, min(s.next+s.run, len(items))
	docs := sc.docs(items[from:end])
	if sc.scoped {
		// A run is s.run documents with the key, which may be sparse:
		// finding them is cheap, running the engine is not.
		s.pos, end = s.pos[:0], from
		for ; end < len(items) && len(s.pos) < s.run; end++ {
			if sc.hasKey(&items[end]) {
				s.pos = append(s.pos, int32(end))
			}
		}
		if len(s.pos) == 0 {
			s.next = end
			return true, nil
		}
		docs = docsAt(items, s.pos)
	}
	if s.pl.filter != nil || s.pl.base.ReadsDocuments() {
		err = sc.decode(items[from:end])
	}
	s.next, s.run = end, max(s.run, min(2*s.run, streamMaxRun))
	s.runFrom, s.runEnd, s.runRows, s.runAt = from, end, nil, nil
	if err == nil {
		if s.pl.filter != nil {
			s.runRows, err = s.pl.base.Execute(ctx, docs)
		} else {
			s.runRows, s.runAt, err = s.each(ctx)
		}
	}
	if err != nil {
		s.reset() // start over if asked again
		return false, err
	}
	// Pass over the rows of the first document a page returned before,
	// then the query's OFFSET.
	k := 0
	for k < len(s.runAt) && int(s.runAt[k].doc) == s.begin && int(s.runAt[k].ord) < s.beginRows {
		k++
	}
	if n := min(s.skip, len(s.runRows)-k); n > 0 {
		k, s.skip = k+n, s.skip-n
	}
	s.held = s.runRows[k:]
	return false, nil
}

// candidates calls yield with the snapshot position of each document in
// scope of the current run, in order, until it returns false.
func (s *stream) candidates(yield func(int32) bool) {
	if s.scope.scoped {
		for _, p := range s.pos {
			if !yield(p) {
				return
			}
		}
		return
	}
	for i := s.runFrom; i < s.runEnd; i++ {
		if s.scope.in(&s.sn.items[i]) && !yield(int32(i)) {
			return
		}
	}
}

// attribute finds the document of each row of the current run of a
// query whose documents give one row each at most: the query's filter
// returns those documents themselves, as the same maps, in order.
func (s *stream) attribute(ctx context.Context) ([]rowAt, error) {
	items := s.sn.items
	docs := s.scope.docs(items[s.runFrom:s.runEnd])
	if s.scope.scoped {
		docs = docsAt(items, s.pos)
	}
	vals, err := s.pl.filter.Values(ctx, docs)
	if err != nil {
		return nil, err
	}
	at := make([]rowAt, 0, len(vals))
	i := 0
	s.candidates(func(p int32) bool {
		if i == len(vals) {
			return false
		}
		if docPointer(&items[p]) == localquery.MapPointer(vals[i]) {
			at = append(at, rowAt{doc: p})
			i++
		}
		return true
	})
	if len(at) != len(vals) || len(at) != len(s.runRows) {
		return nil, errors.New("memstore: internal error: the documents of a run's rows are not found")
	}
	return at, nil
}

// each runs the query over the current run a document at a time (a
// document may give many rows, or rows not its own): each row is known by
// its document. It costs an engine run per document.
func (s *stream) each(ctx context.Context) ([]json.RawMessage, []rowAt, error) {
	var rows []json.RawMessage
	var at []rowAt
	var err error
	s.candidates(func(p int32) bool {
		var r []json.RawMessage
		if r, err = s.pl.base.Execute(ctx, docsAt(s.sn.items, []int32{p})); err != nil {
			return false
		}
		for k := range r {
			at = append(at, rowAt{doc: p, ord: int32(k)})
		}
		rows = append(rows, r...)
		return true
	})
	return rows, at, err
}

// docPointer identifies a decoded snapshot item by its map (nil when not
// decoded).
func docPointer(it *snapItem) unsafe.Pointer {
	if d := it.decoded.Load(); d != nil {
		return localquery.MapPointer(d.Value())
	}
	return nil
}
