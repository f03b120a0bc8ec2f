package query

import (
	"slices"
	"sort"
)

// Property order of results. Values are Go maps, which have no order, but
// Cosmos DB returns the properties of an object a query builds in the order
// the query names them: SELECT c.title, c.id gives {"title": ..., "id": ...}.
// The order is known when the query is compiled, so it is kept beside the
// program as a shape and applied when results are encoded. Objects that
// come from documents (c.address) are written with sorted keys; SELECT *
// returns each document's stored text unchanged.

// shape is the property order of an object a query builds: keys in query
// order, with the shape of each property's value (nil: keys sorted).
type shape struct {
	keys   []string
	fields []*shape
}

// shapeOf is the shape of the value of e: object constructors have one.
func shapeOf(e Expr) *shape {
	o, ok := e.(*ObjectLit)
	if !ok {
		return nil
	}
	s := &shape{keys: o.Keys}
	for _, v := range o.Vals {
		s.fields = append(s.fields, shapeOf(v))
	}
	return s
}

// projectionShape is the shape of a query's results.
func projectionShape(q *Query) *shape {
	switch {
	case q.Star || len(q.Items) == 0:
		return nil
	case q.Value:
		return shapeOf(q.Items[0].X)
	}
	names, err := itemNames(q.Items)
	if err != nil {
		return nil
	}
	s := &shape{keys: names}
	for _, it := range q.Items {
		s.fields = append(s.fields, shapeOf(it.X))
	}
	return s
}

// appendShaped writes v as JSON, the objects that sh describes in its
// order and every other object with sorted keys.
func appendShaped(b []byte, v any, sh *shape) ([]byte, error) {
	m, ok := v.(map[string]any)
	if sh == nil || !ok {
		return appendJSON(b, v)
	}
	b = append(b, '{')
	n := 0
	var err error
	for i, k := range sh.keys {
		x, ok := m[k]
		if !ok {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendJSONString(b, k)
		b = append(b, ':')
		if b, err = appendShaped(b, x, sh.fields[i]); err != nil {
			return nil, err
		}
	}
	if n < len(m) {
		// Properties the shape does not name (none for values the query
		// built itself) follow in sorted order.
		var rest []string
		for k := range m {
			if !slices.Contains(sh.keys, k) {
				rest = append(rest, k)
			}
		}
		sort.Strings(rest)
		for _, k := range rest {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = appendJSONString(b, k)
			b = append(b, ':')
			if b, err = appendJSON(b, m[k]); err != nil {
				return nil, err
			}
		}
	}
	return append(b, '}'), nil
}
