package memstore

import (
	"context"
	"encoding/json"
	"errors"
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
		n += cursor.RowsSize(s.held) + 8*int64(len(s.heldAt)) + 4*int64(cap(s.pos)) + 24*streamMaxRun
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
		items, more, last, err := r.stream.page(ctx, start, pageSize(size, defSize, -1), maxBytes)
		if err != nil || !more || len(items) == 0 {
			return items, more, at, err
		}
		return items, more, r.stream.position(last), nil
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
// not take. Each row is known with the document it came from: a query
// whose documents give one row each at most runs as its filter (the
// documents themselves, matched to their places) and its projection of
// those; any other runs a document at a time. The snapshot never changes,
// so any offset can be found again exactly by scanning from the start: a
// page asked for at another offset than the cursor stands at (a retried
// or repeated token) rescans. Safe for concurrent use.
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
	held   []json.RawMessage // rows run but not yet returned
	heldAt []rowAt           // where each held row comes from
	skip   int               // OFFSET rows still to pass over
	served int               // the results returned so far: the offset held starts at
	run    int               // documents per run, growing
	pos    []int32           // the positions of the run being executed
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
	s := &stream{pl: pl, sn: sn, scope: sc, begin: begin, beginRows: beginRows, offset: offset, limit: limit}
	s.reset()
	return s
}

func (s *stream) reset() {
	s.next, s.held, s.heldAt, s.served, s.run, s.skip = s.begin, nil, nil, 0, streamFirstRun, s.offset
}

// position is where the row last returned from at stands: its document
// and the rows of it returned.
func (s *stream) position(at rowAt) *localquery.Pos {
	return &localquery.Pos{Doc: strconv.FormatUint(s.sn.items[at.doc].e.seq, 10), Rows: int(at.ord) + 1}
}

// page returns up to size results from offset start, ended early once
// their JSON passes maxBytes (always at least one result), whether more
// follow, and where the last one comes from.
func (s *stream) page(ctx context.Context, start, size, maxBytes int) ([]json.RawMessage, bool, rowAt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last rowAt
	if start < s.served {
		s.reset()
	}
	for s.served < start { // skip to start
		if ok, err := s.ready(ctx); err != nil || !ok {
			return nil, false, last, err
		}
		k := min(len(s.held), start-s.served)
		s.held, s.heldAt, s.served = s.held[k:], s.heldAt[k:], s.served+k
	}
	if rem := max(s.limit-s.served, 0); s.limit >= 0 && (size < 0 || size > rem) {
		size = rem
	}
	if size < 0 {
		s.run = len(s.sn.items) // everything is wanted: one run
	}
	var out []json.RawMessage
	bytes := 0
	for size < 0 || len(out) < size {
		if ok, err := s.ready(ctx); err != nil {
			return nil, false, last, err
		} else if !ok {
			break
		}
		room := s.held
		if size >= 0 {
			room = room[:min(len(room), size-len(out))]
		}
		k, b, full := take(room, len(out), bytes, maxBytes)
		bytes = b
		if k > 0 {
			last = s.heldAt[k-1]
		}
		if out == nil {
			out = s.held[:k:k] // the usual page: one run, not copied
		} else {
			out = append(out, s.held[:k]...)
		}
		s.held, s.heldAt = s.held[k:], s.heldAt[k:]
		if full {
			break
		}
	}
	s.served += len(out)
	if s.limit >= 0 && s.served >= s.limit {
		return out, false, last, nil
	}
	// Say whether results follow only once one is there: a selective
	// filter may leave none in the rest of the snapshot.
	more, err := s.ready(ctx)
	if err != nil {
		return nil, false, last, err
	}
	return out, more, last, nil
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
	// A run is s.run documents in scope, which may be sparse: finding
	// them is cheap, running the engine is not.
	from, end := s.next, s.next
	s.pos = s.pos[:0]
	for ; end < len(items) && len(s.pos) < s.run; end++ {
		if sc.in(&items[end]) {
			s.pos = append(s.pos, int32(end))
		}
	}
	s.next, s.run = end, max(s.run, min(2*s.run, streamMaxRun))
	if len(s.pos) == 0 {
		return true, nil
	}
	var rows []json.RawMessage
	var at []rowAt
	if s.pl.filter != nil {
		if err = sc.decode(items[from:end]); err == nil {
			rows, at, err = s.split(ctx)
		}
	} else {
		if s.pl.base.ReadsDocuments() {
			err = sc.decode(items[from:end])
		}
		if err == nil {
			rows, at, err = s.each(ctx)
		}
	}
	if err != nil {
		s.reset() // start over if asked again
		return false, err
	}
	// Pass over the rows of the first document a page returned before,
	// then the query's OFFSET.
	k := 0
	for k < len(at) && int(at[k].doc) == s.begin && int(at[k].ord) < s.beginRows {
		k++
	}
	if n := min(s.skip, len(rows)-k); n > 0 {
		k, s.skip = k+n, s.skip-n
	}
	s.held, s.heldAt = rows[k:], at[k:]
	return false, nil
}

// split runs the run's documents through the filter, matches the
// documents it returns to their places (they come back as the same maps,
// in order) and projects them: one row each.
func (s *stream) split(ctx context.Context) ([]json.RawMessage, []rowAt, error) {
	items := s.sn.items
	vals, err := s.pl.filter.Values(ctx, docsAt(items, s.pos))
	if err != nil {
		return nil, nil, err
	}
	matched := make([]int32, 0, len(vals))
	j := 0
	for _, v := range vals {
		p := localquery.MapPointer(v)
		for j < len(s.pos) && docPointer(&items[s.pos[j]]) != p {
			j++
		}
		if j == len(s.pos) || p == nil {
			return nil, nil, errors.New("memstore: internal error: a filtered document is not one of the run's")
		}
		matched = append(matched, s.pos[j])
		j++
	}
	rows, err := s.pl.project.Execute(ctx, docsAt(items, matched))
	if err == nil && len(rows) != len(matched) {
		err = errors.New("memstore: internal error: a projection lost rows")
	}
	if err != nil {
		return nil, nil, err
	}
	at := make([]rowAt, len(matched))
	for i, p := range matched {
		at[i] = rowAt{doc: p}
	}
	return rows, at, nil
}

// each runs the query over the run a document at a time (a document may
// give many rows, or rows not its own): each row is known by its
// document. It costs an engine run per document.
func (s *stream) each(ctx context.Context) ([]json.RawMessage, []rowAt, error) {
	var rows []json.RawMessage
	var at []rowAt
	for _, p := range s.pos {
		r, err := s.pl.base.Execute(ctx, docsAt(s.sn.items, []int32{p}))
		if err != nil {
			return nil, nil, err
		}
		for k := range r {
			at = append(at, rowAt{doc: p, ord: int32(k)})
		}
		rows = append(rows, r...)
	}
	return rows, at, nil
}

// docPointer identifies a decoded snapshot item by its map (nil when not
// decoded).
func docPointer(it *snapItem) unsafe.Pointer {
	if d := it.decoded.Load(); d != nil {
		return localquery.MapPointer(d.Value())
	}
	return nil
}
