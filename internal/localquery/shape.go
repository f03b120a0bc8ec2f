package localquery

import (
	"fmt"
	"math"
	"strings"

	"github.com/docshard/docshard/query"
)

// Kind says how a query's results map to the documents they come from,
// which decides how a page resumes once the results kept for its token
// are gone.
type Kind int

const (
	// Whole: the results cannot be tied to positions in the collection
	// (aggregates, GROUP BY, DISTINCT, an ORDER BY whose rows are not its
	// documents, ...). A later page needs the results kept for its token;
	// without them the token is refused (Restart).
	Whole Kind = iota
	// Feed: rows come in feed order, each from one document, with
	// nothing across documents but TOP, OFFSET and LIMIT. A page resumes
	// after the document its last row came from (and that document's
	// rows already returned).
	Feed
	// Sorted: an ORDER BY whose rows are its documents, one each. A page
	// resumes strictly after its last row's sort values and document.
	Sorted
)

// Shape is a query split for resuming by position (see Kind). Its queries
// are parsed trees, compiled with the query's parameters.
type Shape struct {
	Kind Kind
	// Base is, for Feed, the query without TOP, OFFSET and LIMIT: its
	// results over consecutive runs of documents concatenate to its
	// results over all of them.
	Base *query.Query
	// Filter and Project split a Feed query whose documents give one row
	// each at most (no JOIN, FROM the container itself): Filter returns
	// the documents themselves (SELECT VALUE of the alias) that give a
	// row, in order; Project returns the row of each document given it
	// (no WHERE). Nil for other Feed queries, which are run a document at
	// a time to know where each row comes from.
	Filter, Project *query.Query
	// Keys returns, for Sorted, the documents themselves in result order
	// (with the query's TOP, OFFSET and LIMIT); KeysAll the same without
	// them (a resumed page applies what remains); Page projects given
	// documents (no WHERE, ORDER BY or limits); SortKey returns a
	// document's ORDER BY values, each wrapped as {"v": value} ({} for
	// undefined).
	Keys, KeysAll, Page, SortKey *query.Query
	// Desc is, for Sorted, each ORDER BY item's direction.
	Desc []bool
}

// Split returns how q (of text, with params) resumes; clock says whether q
// reads the clock (queryhook.ReadsClock, which the caller computes where the
// tree is its own: that walk writes the tree, so it must not run on a tree
// other goroutines compile). Split only reads q. It costs a few
// shallow copies of the tree and, without ORDER BY, a fan-out plan of the
// query (query.PlanFanOut: the planner decides what streams); the caller
// compiles what it needs. Parameters only supply values here (TOP, OFFSET
// and LIMIT are taken off first), so the answer holds for every run of
// the same text.
//
// A Sorted query's results, like the engine's, break ties in sort values
// by the order the documents are given in (the feed order), so a page
// resumes strictly after (sort values, document). Its keys query requires
// a defined row: a SELECT VALUE whose value is undefined for a document
// gives no row, so IS_DEFINED of it is added to the keys query's WHERE.
// An ORDER BY calling RAND or reading the clock is Whole: its values
// would be drawn again by each part. A Feed query reading the clock is
// not split into Filter and Project, so one program reads one instant.
func Split(text string, q *query.Query, params map[string]any, clock bool) Shape {
	if q.From == nil || q.Distinct || len(q.GroupBy) > 0 {
		return Shape{}
	}
	if len(q.OrderBy) > 0 {
		if clock || strings.Contains(strings.ToUpper(text), "RAND") {
			return Shape{}
		}
		return splitSorted(q)
	}
	base := *q
	base.Top, base.Offset, base.Limit = nil, nil, nil
	pl, err := query.PlanFanOut(&base, params)
	if err != nil || pl.Kind != query.Stream || pl.Distinct || pl.SingleCollection {
		return Shape{}
	}
	sh := Shape{Kind: Feed, Base: &base}
	if filter, project, ok := oneRow(&base); ok && !clock {
		sh.Filter, sh.Project = filter, project
	}
	return sh
}

// oneRow splits a query whose documents each give one row at most into
// the documents that give one (filter) and their rows (project).
func oneRow(q *query.Query) (filter, project *query.Query, ok bool) {
	if len(q.Joins) > 0 || q.From.In {
		return nil, nil, false
	}
	if _, ok := q.From.Source.(*query.Ident); !ok || q.From.Alias == "" {
		return nil, nil, false
	}
	f := *q
	f.Star, f.Value = false, true
	f.Items = []query.SelectItem{{X: &query.Ident{Name: q.From.Alias}}}
	if q.Value && !q.Star {
		f.Where = and(q.Where, &query.Call{Name: "IS_DEFINED", Args: []query.Expr{q.Items[0].X}})
	}
	p := *q
	p.Where, p.OrderBy, p.Top, p.Offset, p.Limit = nil, nil, nil, nil, nil
	return &f, &p, true
}

func and(l, r query.Expr) query.Expr {
	if l == nil {
		return r
	}
	return &query.Binary{Op: "AND", L: l, R: r}
}

// splitSorted splits an ORDER BY query whose rows are its documents (no
// JOIN, FROM x IN or FROM path, a SELECT VALUE of one expression).
func splitSorted(q *query.Query) Shape {
	if len(q.Joins) > 0 || q.From.In || q.From.Alias == "" {
		return Shape{}
	}
	if _, ok := q.From.Source.(*query.Ident); !ok {
		return Shape{}
	}
	if q.Value && !q.Star && len(q.Items) != 1 {
		return Shape{}
	}
	keys, page, ok := oneRow(q)
	if !ok {
		return Shape{}
	}
	keys.OrderBy = q.OrderBy
	all := *keys
	all.Top, all.Offset, all.Limit = nil, nil, nil
	sk := &query.ArrayLit{}
	sh := Shape{Kind: Sorted, Keys: keys, KeysAll: &all, Page: page}
	for _, o := range q.OrderBy {
		sk.Elems = append(sk.Elems, &query.ObjectLit{Keys: []string{"v"}, Vals: []query.Expr{o.X}})
		sh.Desc = append(sh.Desc, o.Desc)
	}
	sh.SortKey = &query.Query{Value: true, Items: []query.SelectItem{{X: sk}}, From: q.From}
	return sh
}

// Bounds returns q's OFFSET (0 for none) and its TOP or LIMIT (-1 for
// none), with parameters from params. The error wraps query.ErrCompile.
func Bounds(q *query.Query, params map[string]any) (offset, limit int, err error) {
	limit = -1
	if q.Offset != nil {
		if offset, err = count(q.Offset, params, "OFFSET"); err != nil {
			return 0, 0, err
		}
	}
	switch {
	case q.Top != nil:
		limit, err = count(q.Top, params, "TOP")
	case q.Limit != nil:
		limit, err = count(q.Limit, params, "LIMIT")
	}
	return offset, limit, err
}

// count reads a TOP, OFFSET or LIMIT: a number literal or a parameter.
func count(e query.Expr, params map[string]any, what string) (int, error) {
	var v any
	switch n := e.(type) {
	case *query.Literal:
		v = n.Value
	case *query.ParamRef:
		v = params[n.Name]
	}
	n, err := query.Normalize(v)
	f, ok := n.(float64)
	if err != nil || !ok {
		return 0, fmt.Errorf("%w: %s is a number", query.ErrCompile, what)
	}
	if f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, fmt.Errorf("%w: %s is a whole number from 0 to %d", query.ErrCompile, what, math.MaxInt32)
	}
	return int(f), nil
}
