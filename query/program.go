package query

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"reflect"
	"slices"

	"github.com/docshard/docshard/internal/jsontext"
)

// Doc is a document as the engine reads it: its JSON text and its decoded
// value, built once (NewDoc) and shared read-only by every query.
type Doc struct {
	raw []byte
	val map[string]any
}

// NewDoc decodes a JSON object for the engine. Its strings share raw's
// memory where they can, and short member names are interned
// (jsontext.DecodeShared), so raw must not be modified while the Doc is in
// use; the decoded form then costs its maps, slices and boxes, not a second
// copy of the text. Decoding a 1 KB document costs about 2 µs; stores
// decode a document once and keep the Doc.
func NewDoc(raw []byte) (Doc, error) {
	v, err := jsontext.DecodeShared(raw)
	if err != nil {
		return Doc{}, fmt.Errorf("query: malformed JSON document: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Doc{}, fmt.Errorf("query: a document is a JSON object, got %s", typeName(v))
	}
	return Doc{raw: raw, val: m}, nil
}

// RawDoc is a document the engine decodes only if the query reads it: a
// query that never looks inside its documents (SELECT VALUE COUNT(1) FROM
// c; see Program.ReadsDocuments) counts it undecoded, any other decodes it
// on each run. Stores that query a document many times keep NewDoc's
// decoded form instead, and hand RawDoc only to queries that do not read
// documents. raw must not be modified while the Doc is in use.
func RawDoc(raw []byte) Doc { return Doc{raw: raw} }

// Raw returns the document's JSON text.
func (d Doc) Raw() []byte { return d.raw }

// Value returns the decoded document, nil for a RawDoc; callers must not
// modify it.
func (d Doc) Value() map[string]any { return d.val }

// Program is a compiled query with its parameters bound: safe for
// concurrent use, run any number of times.
type Program struct {
	p *program
}

// normalizeParams returns params with each value as the evaluator holds
// it (Normalize: JSON text decoded, Go numbers as float64), or an error
// wrapping ErrCompile naming the parameter.
func normalizeParams(params map[string]any) (map[string]any, error) {
	norm := make(map[string]any, len(params))
	for k, v := range params {
		n, err := Normalize(v)
		if err != nil {
			return nil, compileErr("parameter %s: %v", k, err)
		}
		norm[k] = n
	}
	return norm, nil
}

// Compile binds params (names with their '@', Go JSON values) to a parsed
// query and compiles it. Unknown functions, wrong arity, missing
// parameters, unresolvable names and misplaced aggregates are errors
// wrapping ErrCompile; nothing about the documents is needed.
func Compile(q *Query, params map[string]any) (*Program, error) {
	norm, err := normalizeParams(params)
	if err != nil {
		return nil, err
	}
	p, err := compileQuery(q, norm, &instant{}, nil, levelTop)
	if err != nil {
		return nil, err
	}
	return &Program{p: p}, nil
}

// Prepare parses and compiles a query text in one call.
func Prepare(text string, params map[string]any) (*Program, error) {
	q, err := Parse(text)
	if err != nil {
		return nil, err
	}
	return Compile(q, params)
}

// Execute runs the program over docs, in their order, and returns the
// results as JSON. Without ORDER BY results come in document order and the
// scan stops as soon as TOP or LIMIT is satisfied; ORDER BY with TOP or
// LIMIT keeps only offset+limit rows in a heap (with DISTINCT as well, every
// row, since duplicates are known only once sorted). SELECT * returns each
// document's stored text unchanged. ctx is checked every 256 documents.
func (pr *Program) Execute(ctx context.Context, docs iter.Seq[Doc]) ([]json.RawMessage, error) {
	var out []json.RawMessage
	var encErr error
	var rw *rowWriter
	if pr.p.write != nil && !pr.p.distinct {
		rw = &rowWriter{w: pr.p.write}
	}
	err := pr.p.runTop(ctx, docs, rw, func(v any, raw []byte) bool {
		if raw != nil {
			out = append(out, raw)
			return true
		}
		b, err := appendShaped(make([]byte, 0, 64), v, pr.p.shape)
		if err != nil {
			encErr = err
			return false
		}
		out = append(out, b)
		return true
	})
	if err == nil {
		err = encErr
	}
	if err == nil && rw != nil {
		err = rw.err
	}
	return out, err
}

// Values runs the program like Execute and returns the results as decoded
// values.
func (pr *Program) Values(ctx context.Context, docs iter.Seq[Doc]) ([]any, error) {
	var out []any
	err := pr.p.runTop(ctx, docs, nil, func(v any, _ []byte) bool {
		out = append(out, v)
		return true
	})
	return out, err
}

// WithMemoryBudget returns a copy of the program whose GROUP BY groups,
// DISTINCT set and ORDER BY rows may each hold up to n bytes (as the
// engine estimates them) instead of DefaultMemoryBudget; past it Execute
// and Values fail with a *LimitError. n <= 0 means the default. Subqueries
// keep the default. It costs one small allocation.
func (pr *Program) WithMemoryBudget(n int64) *Program {
	p := *pr.p
	p.budget = n
	return &Program{p: &p}
}

// ReadsDocuments reports whether running the program reads the contents of
// its documents; when it does not, a store may hand it RawDocs and skip
// decoding them. It says false only for a query whose one source is the
// container itself and that names no alias and uses no * or subquery
// (SELECT VALUE COUNT(1) FROM c, SELECT COUNT(1) AS n FROM c WHERE
// @p = 1): true whenever in doubt. It costs nothing: the answer is fixed
// when the program is compiled.
func (pr *Program) ReadsDocuments() bool { return pr.p.readsDocs }

// MaxResults returns the most results the program can return, from its
// TOP or LIMIT (OFFSET does not add to it), or -1 when nothing bounds them.
// It costs nothing: the bound is fixed when the program is compiled.
func (pr *Program) MaxResults() int { return pr.p.limit }

type program struct {
	shape    *shape // property order of the results
	noFrom   bool
	nslots   int
	source   evalFn   // slot 0's value(s), for a path source
	fromSub  *program // a subquery source: its results are slot 0's value(s)
	sourceIn bool
	starRaw  bool // SELECT * of the whole document: emit its stored text
	joins    []joinSource
	where    evalFn

	project  evalFn  // non-grouped projection; Undefined drops the row
	write    writeFn // the same projection written as JSON (top level, not SELECT *)
	orderBy  []evalFn
	desc     []bool
	distinct bool
	offset   int
	limit    int // -1: none

	budget int64 // memory budget of each grouping, DISTINCT or sort; 0: DefaultMemoryBudget

	readsDocs bool // see readsDocuments
	docSlot   bool // slot 0 holds a stored document (FROM over the container, no path or IN)

	grouped bool
	groupBy []evalFn
	aggs    []aggSpec
	final   evalFn // evaluated on a group frame
}

// count reads a TOP, OFFSET or LIMIT value.
func count(e Expr, params map[string]any, what string) (int, error) {
	var v any
	switch n := e.(type) {
	case *Literal:
		v = n.Value
	case *ParamRef:
		var ok bool
		if v, ok = params[n.Name]; !ok {
			return 0, compileErr("parameter %s has no value", n.Name)
		}
	}
	f, ok := v.(float64)
	if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, compileErr("%s must be a non-negative integer, got %v", what, v)
	}
	return int(f), nil
}

func rootIdent(e Expr) *Ident {
	for {
		switch n := e.(type) {
		case *Ident:
			return n
		case *Member:
			e = n.X
		case *Index:
			e = n.X
		default:
			return nil
		}
	}
}

// level is where a query sits, which decides what its FROM ranges over.
type level int

const (
	// levelSub: a subquery in an expression or a JOIN, correlated: its FROM
	// ranges over values of the enclosing query's row.
	levelSub level = iota
	// levelContainer: the subquery FROM of a whole query (or of such a
	// subquery): its FROM ranges over the container's documents.
	levelContainer
	// levelTop: the whole query; its FROM ranges over the container's
	// documents.
	levelTop
)

// joinSource is one JOIN's source, evaluated for each row so far.
type joinSource struct {
	val evalFn   // a path: its value
	sub *program // a subquery: its results
	in  bool     // JOIN x IN ...: one row per element of each array
}

func compileQuery(q *Query, params map[string]any, clock *instant, outer *scope, lvl level) (*program, error) {
	p := &program{limit: -1, shape: projectionShape(q), readsDocs: readsDocuments(q)}
	c := &compiler{params: params, clock: clock}
	s := &scope{parent: outer}
	var err error
	if q.From == nil {
		p.noFrom = true
	} else {
		if sq, ok := q.From.Source.(*Subquery); ok {
			// A FROM subquery ranges over what its query's FROM would: the
			// container's documents at the top, the enclosing row's values
			// in a correlated subquery.
			inner := levelSub
			if lvl != levelSub {
				inner = levelContainer
			}
			if p.fromSub, err = compileQuery(sq.Q, params, clock, outer, inner); err != nil {
				return nil, err
			}
		} else {
			root := rootIdent(q.From.Source)
			if root == nil {
				return nil, compileErr("the FROM source must start with a name")
			}
			if lvl != levelSub {
				// The root of a FROM over the container is the container, whatever its name.
				cs := &scope{names: []string{root.Name}}
				if p.source, err = c.expr(q.From.Source, cs); err != nil {
					return nil, err
				}
				_, plain := q.From.Source.(*Ident)
				p.starRaw = lvl == levelTop && plain && !q.From.In && q.Star && len(q.Joins) == 0
				p.docSlot = plain && !q.From.In
			} else if p.source, err = c.expr(q.From.Source, outer); err != nil {
				return nil, err
			}
		}
		p.sourceIn = q.From.In
		s.names = append(s.names, q.From.Alias)
		for _, j := range q.Joins {
			js := joinSource{in: j.In}
			if sq, ok := j.Source.(*Subquery); ok {
				js.sub, err = compileQuery(sq.Q, params, clock, s, levelSub)
			} else {
				js.val, err = c.expr(j.Source, s)
			}
			if err != nil {
				return nil, err
			}
			p.joins = append(p.joins, js)
			s.names = append(s.names, j.Alias)
		}
	}
	p.nslots = len(s.names)
	if q.Where != nil {
		if hasAggregate(q.Where) {
			return nil, compileErr("aggregates are not allowed in WHERE")
		}
		if p.where, err = c.expr(q.Where, s); err != nil {
			return nil, err
		}
	}
	if q.Top != nil {
		if p.limit, err = count(q.Top, params, "TOP"); err != nil {
			return nil, err
		}
	}
	if q.Limit != nil {
		if q.Top != nil {
			return nil, compileErr("TOP and OFFSET/LIMIT cannot be combined")
		}
		if p.offset, err = count(q.Offset, params, "OFFSET"); err != nil {
			return nil, err
		}
		if p.limit, err = count(q.Limit, params, "LIMIT"); err != nil {
			return nil, err
		}
	}
	p.distinct = q.Distinct

	if q.Star && (len(q.Joins) > 0) {
		return nil, compileErr("SELECT * needs a single input: name what to project when using JOIN")
	}
	if q.Star && p.noFrom {
		return nil, compileErr("SELECT * needs a FROM clause")
	}
	for _, o := range q.OrderBy {
		if hasAggregate(o.X) {
			return nil, compileErr("aggregates are not allowed in ORDER BY")
		}
	}
	if aggregated(q) {
		if len(q.OrderBy) > 0 && len(q.GroupBy) > 0 {
			return nil, compileErr("ORDER BY cannot be combined with GROUP BY")
		}
		// Aggregates without GROUP BY give one row: ORDER BY orders
		// nothing, and Cosmos DB answers the aggregate
		// (SELECT VALUE COUNT(r.key) FROM r ORDER BY r.key). Its
		// expressions must still compile.
		for _, o := range q.OrderBy {
			if _, err := c.expr(o.X, s); err != nil {
				return nil, err
			}
		}
		if q.Star {
			return nil, compileErr("SELECT * cannot be combined with GROUP BY")
		}
		for _, g := range q.GroupBy {
			if hasAggregate(g) {
				return nil, compileErr("aggregates are not allowed in GROUP BY")
			}
			fn, err := c.expr(g, s)
			if err != nil {
				return nil, err
			}
			p.groupBy = append(p.groupBy, fn)
		}
		gc := &compiler{params: params, clock: clock, grouped: true, aggs: &p.aggs}
		for _, g := range q.GroupBy {
			gc.groupKeys = append(gc.groupKeys, Format(g))
		}
		if p.final, err = gc.projection(q, s); err != nil {
			return nil, err
		}
		p.grouped = true
		return p, nil
	}
	if p.project, err = c.projection(q, s); err != nil {
		return nil, err
	}
	if lvl == levelTop {
		if p.write, err = c.projectionWriter(q, s); err != nil {
			return nil, err
		}
	}
	for _, o := range q.OrderBy {
		fn, err := c.expr(o.X, s)
		if err != nil {
			return nil, err
		}
		p.orderBy = append(p.orderBy, fn)
		p.desc = append(p.desc, o.Desc)
	}
	return p, nil
}

// projection compiles the SELECT clause into one function.
func (c *compiler) projection(q *Query, s *scope) (evalFn, error) {
	if q.Star {
		return func(f *frame) any { return f.vals[0] }, nil
	}
	if q.Value {
		return c.expr(q.Items[0].X, s)
	}
	names, err := itemNames(q.Items)
	if err != nil {
		return nil, err
	}
	vals := make([]evalFn, len(q.Items))
	for i, it := range q.Items {
		if vals[i], err = c.expr(it.X, s); err != nil {
			return nil, err
		}
	}
	return func(f *frame) any {
		out := make(map[string]any, len(vals))
		for i, v := range vals {
			if x := v(f); !isUndefined(x) {
				out[names[i]] = x
			}
		}
		return out
	}, nil
}

// rowsOf enumerates the rows one input produces (after JOIN and WHERE),
// calling emit with a frame that is reused between calls.
func (p *program) rowsOf(fr *frame, rootVal any, emit func(*frame) bool) bool {
	if p.noFrom {
		if p.where != nil {
			if b, ok := p.where(fr).(bool); !ok || !b {
				return true
			}
		}
		return emit(fr)
	}
	if p.sourceIn {
		arr, ok := rootVal.([]any)
		if !ok {
			return true
		}
		for _, e := range arr {
			fr.vals[0] = e
			if !p.joinRows(fr, 0, emit) {
				return false
			}
		}
		return true
	}
	if isUndefined(rootVal) {
		return true
	}
	fr.vals[0] = rootVal
	return p.joinRows(fr, 0, emit)
}

func (p *program) joinRows(fr *frame, j int, emit func(*frame) bool) bool {
	if j == len(p.joins) {
		if p.where != nil {
			if b, ok := p.where(fr).(bool); !ok || !b {
				return true
			}
		}
		return emit(fr)
	}
	js := &p.joins[j]
	if js.sub != nil {
		more := true
		js.sub.rows(fr, func(v any) bool {
			more = p.joinValue(fr, j, v, js.in, emit)
			return more
		})
		return more
	}
	return p.joinValue(fr, j, js.val(fr), js.in, emit)
}

// joinValue binds JOIN j's alias to v (with in, to each element of v when
// it is an array) and goes on with the next JOIN; undefined binds nothing.
func (p *program) joinValue(fr *frame, j int, v any, in bool, emit func(*frame) bool) bool {
	if !in {
		if isUndefined(v) {
			return true
		}
		fr.vals[j+1] = v
		return p.joinRows(fr, j+1, emit)
	}
	arr, ok := v.([]any)
	if !ok {
		return true
	}
	for _, e := range arr {
		fr.vals[j+1] = e
		if !p.joinRows(fr, j+1, emit) {
			return false
		}
	}
	return true
}

// runTop runs a whole query over documents, writing results as JSON with
// rw when it is not nil (see pipeline). A panic while evaluating (a bug in
// the engine) is returned as an error rather than crashing the store that
// runs the query; so is a limit's typed error (StringTooLongError).
func (p *program) runTop(ctx context.Context, docs iter.Seq[Doc], rw *rowWriter, out func(v any, raw []byte) bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = evalError(r) // a bug, or a limit's typed error
		}
	}()
	var ctxErr error
	var curRaw []byte
	raw := func() []byte {
		if p.starRaw {
			return curRaw
		}
		return nil
	}
	p.pipeline(p.containerRows(ctx, docs, &ctxErr, &curRaw), raw, rw, out)
	return ctxErr
}

// containerRows returns the input of a query whose FROM ranges over the
// container: its rows over docs (or over the results of its FROM subquery,
// itself run over docs). It sets *ctxErr when ctx ends the scan or a
// RawDoc the query reads does not decode, and
// *curRaw to the stored text of the document being read.
func (p *program) containerRows(ctx context.Context, docs iter.Seq[Doc], ctxErr *error, curRaw *[]byte) func(func(*frame) bool) {
	return func(emit func(*frame) bool) {
		fr := &frame{vals: make([]any, p.nslots)}
		switch {
		case p.noFrom:
			p.rowsOf(fr, nil, emit)
			return
		case p.fromSub != nil:
			sub := p.fromSub
			sub.pipeline(sub.containerRows(ctx, docs, ctxErr, curRaw), noRaw, nil, func(v any, _ []byte) bool {
				return p.rowsOf(fr, v, emit)
			})
			return
		}
		srcFrame := &frame{vals: make([]any, 1)}
		n := 0
		for d := range docs {
			n++
			if n&255 == 0 {
				if *ctxErr = ctx.Err(); *ctxErr != nil {
					return
				}
			}
			*curRaw = d.raw
			switch {
			case d.val != nil:
				srcFrame.vals[0] = d.val
			case !p.readsDocs:
				srcFrame.vals[0] = unreadDoc
			default: // a RawDoc the query reads
				nd, err := NewDoc(d.raw)
				if err != nil {
					*ctxErr = err
					return
				}
				srcFrame.vals[0] = nd.val
			}
			if !p.rowsOf(fr, p.source(srcFrame), emit) {
				return
			}
		}
		*ctxErr = ctx.Err()
	}
}

// unreadDoc stands for each document of a query that does not read them
// (readsDocuments): an object, which the engine never looks into.
var unreadDoc = map[string]any{}

// readsDocuments reports whether a query may read the contents of its
// container's documents: false only when its source is the container
// itself (FROM c, FROM root r: no path, no IN, no JOIN, no subquery), it
// has no SELECT *, and no expression anywhere in it names anything (every
// name of such a query is its alias, or an error) or holds a subquery.
func readsDocuments(q *Query) bool {
	if q.From == nil || q.Star || len(q.Joins) > 0 || q.From.In {
		return q.From != nil
	}
	if _, plain := q.From.Source.(*Ident); !plain {
		return true
	}
	reads := false
	visit := func(e Expr) bool {
		switch e.(type) {
		case *Ident, *Subquery: // NaN and Infinity too: an alias may shadow them
			reads = true
		}
		return !reads
	}
	exprs := []Expr{q.Top, q.Where, q.Offset, q.Limit}
	for _, it := range q.Items {
		exprs = append(exprs, it.X)
	}
	exprs = append(exprs, q.GroupBy...)
	for _, o := range q.OrderBy {
		exprs = append(exprs, o.X)
	}
	for _, e := range exprs {
		walk(e, visit)
	}
	return reads
}

// noRaw is the raw text of results that are not stored documents.
func noRaw() []byte { return nil }

// rows runs a subquery for one outer row.
func (p *program) rows(outer *frame, yield func(any) bool) {
	input := func(emit func(*frame) bool) {
		fr := &frame{vals: make([]any, p.nslots), parent: outer}
		switch {
		case p.noFrom:
			p.rowsOf(fr, nil, emit)
		case p.fromSub != nil:
			p.fromSub.rows(outer, func(v any) bool { return p.rowsOf(fr, v, emit) })
		default:
			p.rowsOf(fr, p.source(outer), emit)
		}
	}
	p.pipeline(input, noRaw, nil, func(v any, _ []byte) bool { return yield(v) })
}

// pipeline projects, sorts, groups, deduplicates and limits the rows of
// input, handing each result to out until it returns false. With rw (a
// query that is not grouped and has no DISTINCT, whose results are wanted
// as JSON) each result reaches out as its JSON, written without building
// its value; rw.err then says why the rows stopped early, if they did.
func (p *program) pipeline(input func(func(*frame) bool), raw func() []byte, rw *rowWriter, out func(any, []byte) bool) {
	emitter := newLimiter(p.distinct, p.offset, p.limit, out)
	emitter.mem.max = p.budget
	if emitter.mem.max <= 0 {
		emitter.mem.max = DefaultMemoryBudget
	}
	mem := &emitter.mem // one budget for the pipeline, in the limiter's allocation
	if p.limit == 0 {
		return
	}
	switch {
	case p.grouped:
		g := newGrouper(p)
		g.mem = mem
		input(func(fr *frame) bool { g.add(p, fr); return true })
		g.results(p, func(v any) bool { return emitter.emit(v, nil) })
	case len(p.orderBy) == 0 && rw != nil:
		input(func(fr *frame) bool {
			b, ok := rw.write(fr)
			switch {
			case rw.err != nil:
				return false
			case !ok:
				return true
			case emitter.skipped(): // OFFSET: written to learn it is defined, not kept
				return true
			}
			return emitter.emit(nil, rw.keep(b))
		})
	case len(p.orderBy) == 0:
		input(func(fr *frame) bool {
			v := p.project(fr)
			if isUndefined(v) {
				return true
			}
			return emitter.emit(v, raw())
		})
	default:
		keep := -1
		if p.limit >= 0 && !p.distinct {
			keep = p.offset + p.limit
		}
		h := &sortHeap{desc: p.desc, keep: keep}
		seq := 0
		scratch := make([]any, len(p.orderBy)) // a row's keys until it enters the heap
		input(func(fr *frame) bool {
			for i, o := range p.orderBy {
				scratch[i] = o(fr)
			}
			// A row that cannot enter a full heap is not projected at all,
			// and costs no allocation; one that enters it takes the place,
			// and the memory, of the row it pushes out.
			full := h.keep >= 0 && len(h.rows) >= h.keep
			if full && (h.keep == 0 || !h.less(sortRow{keys: scratch, seq: seq}, h.rows[0])) {
				return true
			}
			r := sortRow{seq: seq}
			if rw != nil {
				b, ok := rw.write(fr)
				if rw.err != nil {
					return false
				} else if !ok {
					return true
				}
				if full {
					r.raw = rw.reuse(h.rows[0].raw, b)
				} else {
					r.raw = rw.keep(b)
				}
			} else {
				if r.val = p.project(fr); isUndefined(r.val) {
					return true
				}
				r.raw = raw()
			}
			if !full {
				// What the row holds of its own: written JSON, or a built
				// value. A stored document it returns whole (SELECT *,
				// SELECT VALUE c) is shared with the store, not held.
				held := sizeOf(scratch) + sortRowBytes
				switch {
				case rw != nil:
					held += int64(len(r.raw))
				case r.raw == nil && !p.isStoredDoc(fr, r.val):
					held += sizeOf(r.val)
				}
				mem.charge(held)
			}
			if full {
				r.keys = append(h.rows[0].keys[:0], scratch...)
				h.replaceTop(r)
			} else {
				r.keys = slices.Clone(scratch)
				h.push(r)
			}
			seq++
			return true
		})
		if sortHeapHook != nil {
			sortHeapHook(h)
		}
		for _, r := range h.sorted() {
			if !emitter.emit(r.val, r.raw) {
				return
			}
		}
	}
}

// isStoredDoc reports whether v is the stored document the row was read
// from (the projection returned it whole), which the row shares rather
// than holds.
func (p *program) isStoredDoc(fr *frame, v any) bool {
	if !p.docSlot {
		return false
	}
	m, ok := v.(map[string]any)
	d, ok2 := fr.vals[0].(map[string]any)
	return ok && ok2 && m != nil && reflect.ValueOf(m).UnsafePointer() == reflect.ValueOf(d).UnsafePointer()
}

// limiter applies DISTINCT, OFFSET and LIMIT to a stream of results.
type limiter struct {
	mem     budget // the pipeline's; charged for DISTINCT's keys
	seen    map[string]bool
	skip    int
	left    int // -1: unlimited
	out     func(any, []byte) bool
	stopped bool
}

func newLimiter(distinct bool, offset, limit int, out func(any, []byte) bool) *limiter {
	l := &limiter{skip: offset, left: limit, out: out}
	if distinct {
		l.seen = map[string]bool{}
	}
	return l
}

// skipped reports whether OFFSET takes the next result (counting it), so
// it is not passed on.
func (l *limiter) skipped() bool {
	if l.skip > 0 {
		l.skip--
		return true
	}
	return false
}

// emit passes one result on; it returns false once no more are wanted.
func (l *limiter) emit(v any, raw []byte) bool {
	if l.stopped {
		return false
	}
	if l.seen != nil {
		k := canonical(v)
		if l.seen[k] {
			return true
		}
		l.mem.charge(int64(len(k)) + mapEntryBytes)
		l.seen[k] = true
	}
	if l.skipped() {
		return true
	}
	if l.left == 0 {
		l.stopped = true
		return false
	}
	if !l.out(v, raw) {
		l.stopped = true
		return false
	}
	if l.left > 0 {
		l.left--
		if l.left == 0 {
			l.stopped = true
			return false
		}
	}
	return true
}

// sortRow is one row waiting for ORDER BY.
type sortRow struct {
	keys []any
	val  any
	raw  []byte
	seq  int
}

// compareKeys orders sort keys with per-key direction.
func compareKeys(a, b []any, desc []bool) int {
	for i := range a {
		c := compareValues(a[i], b[i])
		if desc[i] {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// sortHeap collects rows for ORDER BY. With keep >= 0 it is a bounded
// max-heap holding the keep smallest rows (ties broken by arrival), so TOP n
// keeps n rows in memory, not the whole result.
type sortHeap struct {
	rows []sortRow
	desc []bool
	keep int
	peak int // the most rows held at once
}

// sortHeapHook, when set (by tests), sees every ORDER BY heap once filled.
var sortHeapHook func(*sortHeap)

func (h *sortHeap) less(a, b sortRow) bool {
	if c := compareKeys(a.keys, b.keys, h.desc); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

// heap.Interface over the worst-first order.
func (h *sortHeap) Len() int           { return len(h.rows) }
func (h *sortHeap) Less(i, j int) bool { return h.less(h.rows[j], h.rows[i]) }
func (h *sortHeap) Swap(i, j int)      { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }
func (h *sortHeap) Push(x any)         { h.rows = append(h.rows, x.(sortRow)) } // unused: see push
func (h *sortHeap) Pop() any { // unused
	r := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return r
}

func (h *sortHeap) push(r sortRow) {
	defer func() { h.peak = max(h.peak, len(h.rows)) }()
	if h.keep < 0 {
		h.rows = append(h.rows, r)
		return
	}
	if h.keep == 0 {
		return
	}
	if len(h.rows) < h.keep {
		if h.rows == nil {
			h.rows = make([]sortRow, 0, min(h.keep, 1024))
		}
		// heap.Push would box r into an interface: append and sift up.
		h.rows = append(h.rows, r)
		heap.Fix(h, len(h.rows)-1)
		return
	}
	if h.less(r, h.rows[0]) {
		h.replaceTop(r)
	}
}

// replaceTop puts r, known to be less, in the place of the worst row of a
// full bounded heap.
func (h *sortHeap) replaceTop(r sortRow) {
	h.rows[0] = r
	heap.Fix(h, 0)
}

func (h *sortHeap) sorted() []sortRow {
	slices.SortFunc(h.rows, func(a, b sortRow) int {
		if c := compareKeys(a.keys, b.keys, h.desc); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	return h.rows
}
