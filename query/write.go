package query

import (
	"slices"
	"strings"
)

// Results written straight to JSON. Execute returns every result as JSON,
// and most results are objects and arrays the query builds ({"k": [...],
// "p": {...}} for every row the fan-out planner asks a collection for).
// Building each as Go maps and slices only to encode it at once costs a
// map per object and most of a query's allocations, so Execute writes the
// projection directly: object and array constructors append their brackets,
// property names (quoted once, when the query is compiled) and elements,
// and only the values they hold are evaluated and encoded. The bytes are
// those appendShaped writes for the evaluated value, byte for byte:
// constructed objects in the query's property order where a shape names
// them (directly under the projection or another such object), every other
// object with its keys sorted.

// writeFn appends the JSON of an expression's value for the row in f to b
// and reports whether the value is defined. An undefined value writes
// nothing, and b is returned as it was passed.
type writeFn func(f *frame, b []byte) ([]byte, bool, error)

// writer compiles e into a writeFn. ordered says whether an object e
// constructs keeps the query's property order (as a shape says) or sorts
// its keys (as appendJSON does for objects no shape describes).
func (c *compiler) writer(e Expr, s *scope, ordered bool) (writeFn, error) {
	switch n := e.(type) {
	case *ObjectLit:
		vals, err := c.writers(n.Vals, s, ordered)
		if err != nil {
			return nil, err
		}
		return objectWriter(n.Keys, vals, ordered), nil
	case *ArrayLit:
		// appendShaped gives no shape to what an array holds.
		elems, err := c.writers(n.Elems, s, false)
		if err != nil {
			return nil, err
		}
		return func(f *frame, b []byte) ([]byte, bool, error) {
			b = append(b, '[')
			n := 0
			var err error
			for _, w := range elems {
				if b, n, err = appendItem(f, b, n, nil, w); err != nil {
					return nil, false, err
				}
			}
			return append(b, ']'), true, nil
		}, nil
	}
	fn, err := c.expr(e, s)
	if err != nil {
		return nil, err
	}
	return valueWriter(fn), nil
}

// writers compiles each of es into a writeFn.
func (c *compiler) writers(es []Expr, s *scope, ordered bool) ([]writeFn, error) {
	out := make([]writeFn, len(es))
	for i, e := range es {
		w, err := c.writer(e, s, ordered)
		if err != nil {
			return nil, err
		}
		out[i] = w
	}
	return out, nil
}

// valueWriter evaluates fn and encodes its value.
func valueWriter(fn evalFn) writeFn {
	return func(f *frame, b []byte) ([]byte, bool, error) {
		v := fn(f)
		if isUndefined(v) {
			return b, false, nil
		}
		b, err := appendJSON(b, v)
		return b, err == nil, err
	}
}

// objectWriter writes an object of the given properties, in query order or
// sorted by name, leaving out those whose value is undefined. An object is
// never undefined, even with no properties.
func objectWriter(keys []string, vals []writeFn, ordered bool) writeFn {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	if !ordered {
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	}
	names := make([][]byte, len(keys)) // `"name":`, quoted once
	for i, k := range keys {
		names[i] = append(appendJSONString(nil, k), ':')
	}
	return func(f *frame, b []byte) ([]byte, bool, error) {
		b = append(b, '{')
		n := 0
		var err error
		for _, i := range order {
			if b, n, err = appendItem(f, b, n, names[i], vals[i]); err != nil {
				return nil, false, err
			}
		}
		return append(b, '}'), true, nil
	}
}

// appendItem writes an element or property (prefix: its quoted name and a
// colon, or nothing) after n written ones, and returns how many are
// written now: an undefined value is left out, prefix and comma too.
func appendItem(f *frame, b []byte, n int, prefix []byte, w writeFn) ([]byte, int, error) {
	mark := len(b)
	if n > 0 {
		b = append(b, ',')
	}
	b = append(b, prefix...)
	b, ok, err := w(f, b)
	switch {
	case err != nil:
		return nil, n, err
	case !ok:
		return b[:mark], n, nil
	}
	return b, n + 1, nil
}

// projectionWriter compiles the SELECT clause of a query that is not
// grouped into a writer of its results, or returns nil where results are
// not written this way (SELECT *, which returns stored text or the value).
func (c *compiler) projectionWriter(q *Query, s *scope) (writeFn, error) {
	if q.Star {
		return nil, nil
	}
	if q.Value {
		return c.writer(q.Items[0].X, s, true)
	}
	names, err := itemNames(q.Items)
	if err != nil {
		return nil, err
	}
	exprs := make([]Expr, len(q.Items))
	for i, it := range q.Items {
		exprs[i] = it.X
	}
	vals, err := c.writers(exprs, s, true)
	if err != nil {
		return nil, err
	}
	return objectWriter(names, vals, true), nil
}

// rowWriter writes a program's results into memory it hands out in
// slices: rows are written into a scratch buffer and copied into chunks
// shared by many rows, so a page of small results costs a few allocations
// instead of one per row (a row keeps its chunk alive).
type rowWriter struct {
	w       writeFn
	scratch []byte
	chunk   []byte
	err     error
}

// rowChunk is the size of the chunks rows are copied into.
const rowChunk = 8 << 10

// write returns the JSON of the row in f (ok false: undefined), in the
// scratch buffer, valid until the next write.
func (rw *rowWriter) write(f *frame) (row []byte, ok bool) {
	b, ok, err := rw.w(f, rw.scratch[:0])
	if err != nil {
		rw.err = err
		return nil, false
	}
	rw.scratch = b
	return b, ok
}

// keep copies a written row into a chunk and returns it, capped so that
// appending to it cannot reach the next row.
func (rw *rowWriter) keep(row []byte) []byte {
	if len(row) > rowChunk/4 {
		return own(row)
	}
	if cap(rw.chunk)-len(rw.chunk) < len(row) {
		rw.chunk = make([]byte, 0, rowChunk)
	}
	start := len(rw.chunk)
	rw.chunk = append(rw.chunk, row...)
	return rw.chunk[start:len(rw.chunk):len(rw.chunk)]
}

// reuse copies a written row into old, a kept row the caller no longer
// needs, when it fits, else into memory of its own.
func (rw *rowWriter) reuse(old, row []byte) []byte {
	if cap(old) >= len(row) {
		return append(old[:0], row...)
	}
	return own(row)
}

// own copies row into memory of its own, exactly its size.
func own(row []byte) []byte { return slices.Clip(append([]byte(nil), row...)) }
