package memstore

import (
	"container/list"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/docshard/docshard/query"
)

// Compiled queries are kept by their text, so a query run again (every
// page of a fan-out, a polling caller) skips the parser. A compiled
// query.Program has its parameters bound and is safe for concurrent use;
// a parsed query.Query is only read by Compile. So an entry holds the
// parsed trees, compiled once per run when the query has parameters, and
// the programs themselves when it has none.

// maxPreparedText is the longest query text kept: a longer one (a huge IN
// list) is parsed on every run rather than pinned in memory.
const maxPreparedText = 16 << 10

// prepared is one cached query text.
type prepared struct {
	text string
	tree *query.Query
	// keys and page split an ORDER BY query for lazy projection (nil
	// when its shape does not allow it): keys returns the documents
	// themselves in result order, page projects given documents.
	keys, page *query.Query
	// streams: the query's results over consecutive runs of documents
	// concatenate to its results over all of them, so pages can be read
	// as the scan goes (see stream). 0 until known, then 1 no, 2 yes.
	streams  atomic.Int32
	compiled atomic.Pointer[plan] // without parameters, once compiled
	// clock: the query reads the clock (GetCurrentDateTime...), which a
	// program fixes when it is compiled: such a query is compiled for
	// every run, as one program (not split for lazy projection), so one
	// run reads one instant.
	clock bool
}

// plan is a query compiled with its parameters.
type plan struct {
	prog       *query.Program
	keys, page *query.Program // nil: no lazy projection
	streams    bool
}

// programs is a bounded LRU of prepared queries, safe for concurrent use.
type programs struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element
	lru   list.List
}

func newPrograms(n int) *programs {
	return &programs{max: n, items: make(map[string]*list.Element, n)}
}

// get returns the entry of text, if cached.
func (c *programs) get(text string) *prepared {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[text]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*prepared)
}

// put caches p, evicting the least recently used entry when full.
func (c *programs) put(p *prepared) {
	if len(p.text) > maxPreparedText || c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[p.text]; ok {
		return
	}
	c.items[p.text] = c.lru.PushFront(p)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.items, old.Value.(*prepared).text)
	}
}

// prepare returns the plan of text with params bound: from the cache when
// text was seen before (compiling it again only when it has parameters),
// else parsed, compiled and cached. Errors are not cached.
func (c *programs) prepare(text string, params map[string]any) (*plan, error) {
	p := c.get(text)
	if p == nil {
		tree, err := query.Parse(text)
		if err != nil {
			return nil, err
		}
		p = &prepared{text: text, tree: tree, clock: query.ReadsClock(tree)}
		if !p.clock {
			p.keys, p.page = splitOrderBy(text, tree)
		}
		c.put(p)
	}
	if len(params) == 0 && !p.clock {
		if pl := p.compiled.Load(); pl != nil {
			return pl, nil
		}
	}
	prog, err := query.Compile(p.tree, params)
	if err != nil {
		return nil, err
	}
	if p.streams.Load() == 0 {
		// Parameters only supply values here (TOP, OFFSET and LIMIT,
		// which they could size, rule streaming out), so the answer
		// holds for every run.
		if streams(p.tree, params) {
			p.streams.Store(2)
		} else {
			p.streams.Store(1)
		}
	}
	pl := &plan{prog: prog, streams: p.streams.Load() == 2}
	if p.keys != nil {
		keys, errK := query.Compile(p.keys, params)
		page, errP := query.Compile(p.page, params)
		if errK == nil && errP == nil {
			pl.keys, pl.page = keys, page
		}
	}
	if len(params) == 0 && !p.clock {
		p.compiled.Store(pl)
	}
	return pl, nil
}

// splitOrderBy returns, for an ORDER BY query whose results can be
// projected after sorting, one result per document, the two queries that
// do it: keys is the query returning the documents themselves (SELECT
// VALUE of the FROM alias, same WHERE, ORDER BY, TOP, OFFSET and LIMIT),
// page is the projection alone (no WHERE, ORDER BY or limits), run later
// over the sorted documents of one page. It returns nils for any other
// query: without ORDER BY, with DISTINCT, GROUP BY, JOIN, FROM x IN or a
// FROM path (rows are not documents then), or a SELECT VALUE that may be
// undefined (undefined rows are dropped, so the projection decides which
// documents are results). A query calling RAND is left alone too: its
// values would be drawn per page instead of once.
func splitOrderBy(text string, q *query.Query) (keys, page *query.Query) {
	if len(q.OrderBy) == 0 || q.Distinct || len(q.GroupBy) > 0 || len(q.Joins) > 0 || q.From == nil || q.From.In {
		return nil, nil
	}
	if _, ok := q.From.Source.(*query.Ident); !ok {
		return nil, nil
	}
	if q.Value && !q.Star {
		if len(q.Items) != 1 {
			return nil, nil
		}
		switch q.Items[0].X.(type) {
		case *query.ObjectLit, *query.ArrayLit:
		default:
			return nil, nil
		}
	}
	if strings.Contains(strings.ToUpper(text), "RAND") {
		return nil, nil
	}
	k := *q
	k.Star, k.Value = false, true
	k.Items = []query.SelectItem{{X: &query.Ident{Name: q.From.Alias}}}
	p := *q
	p.Where, p.OrderBy, p.Top, p.Offset, p.Limit = nil, nil, nil, nil, nil
	return &k, &p
}

// streams reports whether q's results over consecutive runs of documents
// concatenate to its results over all of them, in order: a query whose
// every row comes from one document, evaluated alone (filters,
// projections, JOINs, subqueries over the document), with nothing that
// looks across documents: no ORDER BY, aggregate, GROUP BY, DISTINCT, TOP,
// OFFSET or LIMIT. The fan-out planner answers the same question for
// collections (a Stream plan merges by concatenation), so it decides.
func streams(q *query.Query, params map[string]any) bool {
	if q.From == nil || q.Top != nil || q.Offset != nil || q.Limit != nil || q.Distinct || len(q.OrderBy) > 0 || len(q.GroupBy) > 0 {
		return false
	}
	pl, err := query.PlanFanOut(q, params)
	return err == nil && pl.Kind == query.Stream && !pl.Distinct && pl.Offset == 0 && pl.Limit < 0 && !pl.SingleCollection
}
