package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"unsafe"

	"github.com/docshard/docshard/query"
)

// resultSet is what a query's cursor holds between pages: either every
// result as JSON (rows), or, for an ORDER BY query whose projection can
// wait, the sorted positions of the result documents in an immutable
// snapshot and the program that projects them, so a cursor over 100,000
// sorted documents holds 100,000 int32s instead of 100,000 projected
// rows, and each page projects only its own documents.
type resultSet struct {
	rows []json.RawMessage

	sn   *snapshot // lazy: the snapshot the query ran on (never modified)
	pos  []int32   // lazy: result documents, as indexes into sn.items
	page *query.Program
}

func (r *resultSet) len() int {
	if r.page != nil {
		return len(r.pos)
	}
	return len(r.rows)
}

// pageOf returns the page starting at start: at most size results (the
// store's default for 0, unbounded for -1), ended early by maxBytes (the
// total of the results' JSON sizes), and always at least one result.
// Lazily held results are projected here, in chunks of 512 documents
// and more, so a page of n results projects at most n documents, and at
// most a chunk more when the byte cap ends it.
func (r *resultSet) pageOf(ctx context.Context, start, size, defSize, maxBytes int) ([]json.RawMessage, error) {
	n := r.len()
	switch {
	case size == 0:
		size = defSize
	case size < 0:
		size = n
	}
	start = min(start, n)
	if r.page == nil {
		end := pageEnd(r.rows, start, size, maxBytes)
		return r.rows[start:end:end], nil
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
		cut := 0
		for ; cut < len(rows); cut++ {
			if bytes += len(rows[cut]); bytes > maxBytes && len(out)+cut > 0 {
				break
			}
		}
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
	items := r.sn.items
	rows, err := r.page.Execute(ctx, func(yield func(query.Doc) bool) {
		for _, p := range pos {
			if !yield(*items[p].doc) {
				return
			}
		}
	})
	if err == nil && len(rows) != len(pos) {
		err = errors.New("memstore: internal error: a lazily projected page lost rows")
	}
	return rows, err
}

// pageEnd returns where a page of items starting at start ends: after
// size items or once their total length passes maxBytes, whichever comes
// first, and after at least one item (when there is one).
func pageEnd(items []json.RawMessage, start, size, maxBytes int) int {
	end, bytes := start, 0
	for end < len(items) && end-start < size {
		bytes += len(items[end])
		if bytes > maxBytes && end > start {
			break
		}
		end++
	}
	return end
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
	idx := sn.index()
	if idx == nil {
		return nil, false, nil
	}
	pos := make([]int32, len(vals))
	for i, v := range vals {
		p, ok := idx[mapPointer(v)]
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

// index maps each document's decoded map to its position in the
// snapshot, built on first use; nil when two positions share a map (never
// expected; lazy projection is then off for the snapshot).
func (sn *snapshot) index() map[unsafe.Pointer]int32 {
	sn.idxOnce.Do(func() {
		idx := make(map[unsafe.Pointer]int32, len(sn.items))
		for i := range sn.items {
			p := mapPointer(sn.items[i].doc.Value())
			if _, dup := idx[p]; dup || p == nil {
				return
			}
			idx[p] = int32(i)
		}
		sn.idx = idx
	})
	return sn.idx
}
