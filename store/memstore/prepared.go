package memstore

import (
	"container/list"
	"sync"

	"github.com/docshard/docshard/query"
)

// Compiled queries are kept by their text, so a query run again (every
// page of a fan-out, a polling caller) skips the parser. A compiled
// query.Program has its parameters bound and is safe for concurrent use;
// a parsed query.Query is only read by Compile. So an entry holds the
// parsed tree, compiled once per run when the query has parameters, and
// the program itself when it has none.

// maxPreparedText is the longest query text kept: a longer one (a huge IN
// list) is parsed on every run rather than pinned in memory.
const maxPreparedText = 16 << 10

// prepared is one cached query text.
type prepared struct {
	text string
	tree *query.Query
	prog *query.Program // compiled without parameters
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
	if el, ok := c.items[p.text]; ok {
		el.Value = p
		c.lru.MoveToFront(el)
		return
	}
	c.items[p.text] = c.lru.PushFront(p)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.items, old.Value.(*prepared).text)
	}
}

// prepare returns the program of text with params bound: from the cache
// when text was seen before (compiling it again only when it has
// parameters), else parsed, compiled and cached. Errors are not cached.
func (c *programs) prepare(text string, params map[string]any) (*query.Program, error) {
	p := c.get(text)
	if p == nil {
		tree, err := query.Parse(text)
		if err != nil {
			return nil, err
		}
		p = &prepared{text: text, tree: tree}
		if len(params) > 0 {
			// Cache the tree; the program depends on the parameters.
			c.put(p)
			return query.Compile(tree, params)
		}
		prog, err := query.Compile(tree, nil)
		if err != nil {
			return nil, err
		}
		p.prog = prog
		c.put(p)
		return prog, nil
	}
	if len(params) == 0 {
		if p.prog != nil {
			return p.prog, nil
		}
		prog, err := query.Compile(p.tree, nil)
		if err != nil {
			return nil, err
		}
		c.put(&prepared{text: text, tree: p.tree, prog: prog})
		return prog, nil
	}
	return query.Compile(p.tree, params)
}
