package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"unsafe"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/query"
)

// resultSet is what a query's cursor holds between pages, by the query's
// shape: every result as JSON (rows); for an ORDER BY query whose
// projection can wait, the sorted positions of the result documents in an
// immutable snapshot and the program that projects them, so a cursor over
// 100,000 sorted documents holds 100,000 int32s and each page projects
// only its own documents; or a stream, for a query read as its scan goes.
type resultSet struct {
	rows []json.RawMessage

	sn   *snapshot // lazy: the snapshot the query ran on (never modified)
	pos  []int32   // lazy: result documents, as indexes into sn.items
	page *query.Program

	stream *stream // a query read as its scan goes
}

// bytes estimates what the result set holds for its cursor: the rows'
// JSON, the positions, and a stream's rows held between pages (measured
// when the cursor is cached: a stream holds at most a run's rows).
func (r *resultSet) bytes() int64 {
	n := cursor.RowsSize(r.rows) + 4*int64(len(r.pos)) + 64
	if s := r.stream; s != nil {
		s.mu.Lock()
		n += cursor.RowsSize(s.held) + 4*int64(cap(s.pos)) + 24*streamMaxRun
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

// next returns the page starting at result start (see pageOf) and whether
// results follow it.
func (r *resultSet) next(ctx context.Context, start, size, defSize, maxBytes int) ([]json.RawMessage, bool, error) {
	if r.stream != nil {
		return r.stream.page(ctx, start, pageSize(size, defSize, -1), maxBytes)
	}
	start = min(start, r.len())
	items, err := r.pageOf(ctx, start, size, defSize, maxBytes)
	return items, start+len(items) < r.len(), err
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
func runLazy(ctx context.Context, sn *snapshot, pl *plan, docs func(func(query.Doc) bool)) (*resultSet, bool, error) {
	vals, err := pl.keys.Values(ctx, docs)
	if err != nil {
		return nil, false, err
	}
	idx, rebuilt := sn.index(false), false
	pos := make([]int32, len(vals))
	for i, v := range vals {
		p, ok := idx[mapPointer(v)]
		if !ok && !rebuilt {
			idx, rebuilt = sn.index(true), true
			p, ok = idx[mapPointer(v)]
		}
		if !ok {
			return nil, false, nil
		}
		pos[i] = p
	}
	return &resultSet{sn: sn, pos: pos, page: pl.page}, true, nil
}

// mapPointer identifies a decoded document by its map (nil for anything
// else): the keys program returns the documents' own maps.
func mapPointer(v any) unsafe.Pointer {
	m, ok := v.(map[string]any)
	if !ok || m == nil {
		return nil
	}
	return reflect.ValueOf(m).UnsafePointer()
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
		p := mapPointer(d.Value())
		if _, dup := idx[p]; dup || p == nil {
			return nil
		}
		idx[p] = int32(i)
	}
	sn.idx.Store(&idx)
	return idx
}

// stream reads a query whose rows come from single documents (see
// streams) page by page as it scans the snapshot, instead of running it
// over every document first: a page costs the documents it needs, and a
// cursor holds the snapshot, a position and the rows of the last run of
// documents that the page did not take. The snapshot never changes, so
// any offset can be found again exactly by scanning from the start: a
// page asked for at another offset than the cursor stands at (a retried
// or repeated token) rescans. Safe for concurrent use.
type stream struct {
	mu     sync.Mutex
	prog   *query.Program
	sn     *snapshot
	scope  scope             // the documents the query reads
	next   int               // the snapshot position of the next document to run
	held   []json.RawMessage // rows run but not yet returned
	served int               // the results returned so far: the offset held starts at
	run    int               // documents per run, growing
	pos    []int32           // the positions of the run being executed
}

const (
	streamFirstRun = 128
	streamMaxRun   = 8192
)

func newStream(prog *query.Program, sn *snapshot, sc scope) *stream {
	return &stream{prog: prog, sn: sn, scope: sc, run: streamFirstRun}
}

// page returns up to size results from offset start, ended early once
// their JSON passes maxBytes (always at least one result), and whether
// more follow.
func (s *stream) page(ctx context.Context, start, size, maxBytes int) ([]json.RawMessage, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if start < s.served {
		s.next, s.held, s.served, s.run = 0, nil, 0, streamFirstRun
	}
	for s.served < start { // skip to start
		if ok, err := s.ready(ctx); err != nil || !ok {
			return nil, false, err
		}
		k := min(len(s.held), start-s.served)
		s.held, s.served = s.held[k:], s.served+k
	}
	if size < 0 {
		s.run = len(s.sn.items) // everything is wanted: one run
	}
	var out []json.RawMessage
	bytes := 0
	for size < 0 || len(out) < size {
		if ok, err := s.ready(ctx); err != nil {
			return nil, false, err
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
		if full {
			break
		}
	}
	s.served += len(out)
	// Say whether results follow only once one is there: a selective
	// filter may leave none in the rest of the snapshot.
	more, err := s.ready(ctx)
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
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
	items := s.sn.items
	if s.next >= len(items) {
		return true, nil
	}
	var docs func(func(query.Doc) bool)
	from, end, sc := s.next, s.next, &s.scope
	if sc.scoped {
		// A run is s.run documents with the key, which may be sparse:
		// finding them is cheap, running the engine is not.
		s.pos = s.pos[:0]
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
	} else {
		end = min(from+s.run, len(items))
		docs = sc.docs(items[from:end])
	}
	if s.prog.ReadsDocuments() {
		if err := sc.decode(items[from:end]); err != nil {
			return false, err
		}
	}
	s.next, s.run = end, max(s.run, min(2*s.run, streamMaxRun))
	rows, err := s.prog.Execute(ctx, docs)
	if err != nil {
		s.next, s.held, s.served, s.run = 0, nil, 0, streamFirstRun // start over if asked again
		return false, err
	}
	s.held = rows
	return false, nil
}
