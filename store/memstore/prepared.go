package memstore

import (
	"container/list"
	"sync"
	"sync/atomic"

	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/internal/queryhook"
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
	// shape is how the query's pages resume by position and the parts
	// it is split into (localquery.Split), known on the first prepare:
	// parameters only supply values to it, so it holds for every run.
	shapeOnce sync.Once
	shape     localquery.Shape
	compiled  atomic.Pointer[plan] // without parameters, once compiled
	// clock: the query reads the clock (GetCurrentDateTime...), which a
	// program fixes when it is compiled: such a query is compiled for
	// every run, as one program (its parts not split), so one run reads
	// one instant.
	clock bool
}

// plan is a query compiled with its parameters: the query whole (prog)
// and, by its shape, the parts its pages run (see localquery.Shape).
type plan struct {
	prog *query.Program
	kind localquery.Kind
	// Feed: read as the scan goes (see stream); base is the query without
	// its TOP, OFFSET and LIMIT (offset, limit; -1 for none), filter and
	// project its split into documents and rows (nil: base is run a
	// document at a time).
	base, filter, project *query.Program
	offset, limit         int
	// Sorted: keys returns the documents themselves in result order (with
	// the query's limits), keysAll the same without them (a resumed page);
	// page projects given documents; sortKey returns a document's sort
	// values; desc their directions.
	keys, keysAll, page, sortKey *query.Program
	desc                         []bool
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
// else parsed, compiled and cached. Errors are not cached. A part of the
// shape that does not compile (never expected) leaves the query Whole.
func (c *programs) prepare(text string, params map[string]any) (*plan, error) {
	p := c.get(text)
	if p == nil {
		tree, err := query.Parse(text)
		if err != nil {
			return nil, err
		}
		p = &prepared{text: text, tree: tree, clock: queryhook.ReadsClock(tree)}
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
	p.shapeOnce.Do(func() { p.shape = localquery.Split(text, p.tree, params, p.clock) })
	pl := &plan{prog: prog}
	if err := pl.split(p.shape, p.tree, params); err != nil {
		pl = &plan{prog: prog}
	}
	if len(params) == 0 && !p.clock {
		p.compiled.Store(pl)
	}
	return pl, nil
}

// split compiles the parts of shape sh.
func (pl *plan) split(sh localquery.Shape, tree *query.Query, params map[string]any) error {
	var err error
	compile := func(q *query.Query) *query.Program {
		if q == nil || err != nil {
			return nil
		}
		var prog *query.Program
		prog, err = query.Compile(q, params)
		return prog
	}
	switch sh.Kind {
	case localquery.Feed:
		if pl.offset, pl.limit, err = localquery.Bounds(tree, params); err != nil {
			return err
		}
		pl.base, pl.filter, pl.project = compile(sh.Base), compile(sh.Filter), compile(sh.Project)
	case localquery.Sorted:
		pl.keys, pl.keysAll, pl.page, pl.sortKey = compile(sh.Keys), compile(sh.KeysAll), compile(sh.Page), compile(sh.SortKey)
		pl.desc = sh.Desc
	}
	if err == nil {
		pl.kind = sh.Kind
	}
	return err
}
