package query

import (
	"errors"
	"fmt"
	"math"
)

// ErrCompile is wrapped by every error Compile returns for a query that
// parses but cannot run: an unknown function, a wrong number of arguments, a
// missing parameter, an unresolvable name, a misplaced aggregate.
var ErrCompile = errors.New("query: invalid query")

func compileErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCompile, fmt.Sprintf(format, args...))
}

// ungroupedError is a grouped SELECT reading the row outside GROUP BY and
// the aggregates: Expr is the whole property path at fault (c.userId, not
// c), so the message names what the user wrote.
type ungroupedError struct{ expr string }

func (e *ungroupedError) Error() string {
	return fmt.Sprintf("%v: %s must appear in GROUP BY or inside an aggregate", ErrCompile, e.expr)
}

func (e *ungroupedError) Unwrap() error { return ErrCompile }

// widenUngrouped names the property path e in an ungroupedError from its
// operand; other errors pass unchanged.
func widenUngrouped(e Expr, err error) error {
	var ue *ungroupedError
	if errors.As(err, &ue) {
		return &ungroupedError{expr: Format(e)}
	}
	return err
}

// numberConstants are the names Cosmos DB reads as non-finite numbers.
var numberConstants = map[string]any{"NaN": math.NaN(), "Infinity": math.Inf(1)}

// frame holds the values bound to a query's aliases for one row; parent is
// the enclosing query's row, for correlated subqueries.
type frame struct {
	vals   []any
	parent *frame
}

type evalFn func(f *frame) any

// scope is what names mean while compiling one query level.
type scope struct {
	names  []string
	parent *scope
}

func (s *scope) resolve(name string) (depth, slot int, ok bool) {
	for d := 0; s != nil; d, s = d+1, s.parent {
		for i := len(s.names) - 1; i >= 0; i-- {
			if s.names[i] == name {
				return d, i, true
			}
		}
	}
	return 0, 0, false
}

// compiler turns expressions into closures.
type compiler struct {
	params map[string]any
	clock  *instant // the query's one instant, for GetCurrentDateTime and the like
	// Group mode: compiling a grouped projection, where a subexpression
	// equal to a GROUP BY expression reads the group's key, an aggregate
	// reads its slot, and any other reference to the row is an error.
	grouped   bool
	groupKeys []string // Format of each GROUP BY expression
	aggs      *[]aggSpec
	inAgg     bool
}

// aggSpec is one aggregate call of a grouped query.
type aggSpec struct {
	name string
	arg  evalFn
	call *Call // the aggregate call, for the fan-out planner
}

// groupFrame is the frame of a grouped projection: vals[0] holds the
// group's key values, vals[1] the aggregate results.
const (
	groupKeySlot = 0
	groupAggSlot = 1
)

func (c *compiler) expr(e Expr, s *scope) (evalFn, error) {
	if c.grouped && !c.inAgg {
		text := Format(e)
		for i, k := range c.groupKeys {
			if k == text {
				return func(f *frame) any { return f.vals[groupKeySlot].([]any)[i] }, nil
			}
		}
	}
	switch n := e.(type) {
	case *Literal:
		v := n.Value
		return func(*frame) any { return v }, nil
	case *ParamRef:
		v, ok := c.params[n.Name]
		if !ok {
			return nil, compileErr("parameter %s has no value", n.Name)
		}
		return func(*frame) any { return v }, nil
	case *Ident:
		if _, constant := numberConstants[n.Name]; c.grouped && !c.inAgg && !constant {
			return nil, &ungroupedError{expr: n.Name}
		}
		depth, slot, ok := s.resolve(n.Name)
		if !ok {
			// NaN and Infinity are number constants unless a name shadows
			// them (nosql/query/tostring uses ToString(NaN), ToString(Infinity)).
			if v, ok := numberConstants[n.Name]; ok {
				return func(*frame) any { return v }, nil
			}
			return nil, compileErr("identifier %q could not be resolved", n.Name)
		}
		if depth == 0 {
			return func(f *frame) any { return f.vals[slot] }, nil
		}
		return func(f *frame) any {
			for i := 0; i < depth; i++ {
				f = f.parent
			}
			return f.vals[slot]
		}, nil
	case *Member:
		x, err := c.expr(n.X, s)
		if err != nil {
			return nil, widenUngrouped(e, err)
		}
		name := n.Name
		return func(f *frame) any {
			if m, ok := x(f).(map[string]any); ok {
				if v, ok := m[name]; ok {
					return v
				}
			}
			return Undefined
		}, nil
	case *Index:
		fns, err := c.exprs(s, n.X, n.Index)
		if err != nil {
			return nil, widenUngrouped(e, err)
		}
		x, idx := fns[0], fns[1]
		return func(f *frame) any { return index(x(f), idx(f)) }, nil
	case *Unary:
		x, err := c.expr(n.X, s)
		if err != nil {
			return nil, err
		}
		switch n.Op {
		case "NOT":
			return func(f *frame) any { return not3(x(f)) }, nil
		case "-":
			return func(f *frame) any {
				if v, ok := x(f).(float64); ok {
					return -v
				}
				return Undefined
			}, nil
		case "+":
			return func(f *frame) any {
				if v, ok := x(f).(float64); ok {
					return v
				}
				return Undefined
			}, nil
		case "~":
			return func(f *frame) any {
				if v, ok := x(f).(float64); ok {
					return float64(^toInt32(v))
				}
				return Undefined
			}, nil
		}
		return nil, compileErr("unknown operator %s", n.Op)
	case *Binary:
		fns, err := c.exprs(s, n.L, n.R)
		if err != nil {
			return nil, err
		}
		l, r := fns[0], fns[1]
		switch op := n.Op; op {
		case "AND":
			return func(f *frame) any {
				a := l(f)
				if b, ok := a.(bool); ok && !b {
					return false
				}
				return and3(a, r(f))
			}, nil
		case "OR":
			return func(f *frame) any {
				a := l(f)
				if b, ok := a.(bool); ok && b {
					return true
				}
				return or3(a, r(f))
			}, nil
		case "??":
			return func(f *frame) any {
				if a := l(f); !isUndefined(a) {
					return a
				}
				return r(f)
			}, nil
		case "||":
			return func(f *frame) any {
				a, ok1 := l(f).(string)
				b, ok2 := r(f).(string)
				if !ok1 || !ok2 {
					return Undefined
				}
				checkStringLen("||", len(a)+len(b))
				return a + b
			}, nil
		case "=", "!=", "<", "<=", ">", ">=":
			return func(f *frame) any { return compareOp(op, l(f), r(f)) }, nil
		default:
			return func(f *frame) any { return arith(op, l(f), r(f)) }, nil
		}
	case *Between:
		fns, err := c.exprs(s, n.X, n.Low, n.High)
		if err != nil {
			return nil, err
		}
		x, lo, hi := fns[0], fns[1], fns[2]
		not := n.Not
		return func(f *frame) any {
			v := x(f)
			res := and3(compareOp(">=", v, lo(f)), compareOp("<=", v, hi(f)))
			if not {
				return not3(res)
			}
			return res
		}, nil
	case *In:
		x, err := c.expr(n.X, s)
		if err != nil {
			return nil, err
		}
		list, err := c.exprs(s, n.List...)
		if err != nil {
			return nil, err
		}
		not := n.Not
		return func(f *frame) any {
			v := x(f)
			var res any = false
			for _, e := range list {
				res = or3(res, compareOp("=", v, e(f)))
				if b, ok := res.(bool); ok && b {
					break
				}
			}
			if not {
				return not3(res)
			}
			return res
		}, nil
	case *Like:
		fns, err := c.exprs(s, n.X, n.Pattern)
		if err != nil {
			return nil, err
		}
		x, pat := fns[0], fns[1]
		var esc evalFn
		if n.Escape != nil {
			if esc, err = c.expr(n.Escape, s); err != nil {
				return nil, err
			}
		}
		not := n.Not
		return func(f *frame) any {
			sv, ok1 := x(f).(string)
			pv, ok2 := pat(f).(string)
			if !ok1 || !ok2 {
				return Undefined
			}
			var escape rune
			if esc != nil {
				e, ok := esc(f).(string)
				if !ok || len([]rune(e)) != 1 {
					return Undefined
				}
				escape = []rune(e)[0]
			}
			m, ok := likeMatch(sv, pv, escape)
			if !ok {
				return Undefined
			}
			return m != not
		}, nil
	case *Ternary:
		fns, err := c.exprs(s, n.Cond, n.Then, n.Else)
		if err != nil {
			return nil, err
		}
		cond, then, els := fns[0], fns[1], fns[2]
		return func(f *frame) any {
			if b, ok := cond(f).(bool); ok && b {
				return then(f)
			}
			return els(f)
		}, nil
	case *ArrayLit:
		elems, err := c.exprs(s, n.Elems...)
		if err != nil {
			return nil, err
		}
		return func(f *frame) any {
			out := make([]any, 0, len(elems))
			for _, e := range elems {
				if v := e(f); !isUndefined(v) {
					out = append(out, v)
				}
			}
			return out
		}, nil
	case *ObjectLit:
		seen := map[string]bool{}
		for _, k := range n.Keys {
			if seen[k] {
				return nil, compileErr("object property %q is given twice", k)
			}
			seen[k] = true
		}
		vals, err := c.exprs(s, n.Vals...)
		if err != nil {
			return nil, err
		}
		keys := n.Keys
		return func(f *frame) any {
			out := make(map[string]any, len(keys))
			for i, v := range vals {
				if x := v(f); !isUndefined(x) {
					out[keys[i]] = x
				}
			}
			return out
		}, nil
	case *Call:
		return c.call(n, s)
	case *Subquery:
		return c.subquery(n, s)
	}
	return nil, compileErr("unsupported expression %T", e)
}

// exprs compiles each expression, in order.
func (c *compiler) exprs(s *scope, es ...Expr) ([]evalFn, error) {
	out := make([]evalFn, len(es))
	for i, e := range es {
		fn, err := c.expr(e, s)
		if err != nil {
			return nil, err
		}
		out[i] = fn
	}
	return out, nil
}

func index(x, i any) any {
	switch v := x.(type) {
	case []any:
		f, ok := i.(float64)
		if !ok || f < 0 || f >= float64(len(v)) || f != math.Trunc(f) {
			return Undefined
		}
		return v[int(f)]
	case map[string]any:
		k, ok := i.(string)
		if !ok {
			return Undefined
		}
		if e, ok := v[k]; ok {
			return e
		}
	}
	return Undefined
}

func (c *compiler) call(n *Call, s *scope) (evalFn, error) {
	if isAggregateCall(n) {
		if !c.grouped {
			return nil, compileErr("aggregate %s is only allowed in the SELECT clause", n.Name)
		}
		if c.inAgg {
			return nil, compileErr("aggregate %s cannot be nested inside another aggregate", n.Name)
		}
		if len(n.Args) != 1 {
			return nil, compileErr("%s takes 1 argument, got %d", n.Name, len(n.Args))
		}
		c.inAgg = true
		arg, err := c.expr(n.Args[0], s)
		c.inAgg = false
		if err != nil {
			return nil, err
		}
		slot := len(*c.aggs)
		*c.aggs = append(*c.aggs, aggSpec{name: n.Name, arg: arg, call: n})
		return func(f *frame) any { return f.vals[groupAggSlot].([]any)[slot] }, nil
	}
	if clock, ok := clockNames[n.Name]; ok {
		if len(n.Args) != 0 {
			return nil, compileErr("%s takes 0 arguments, got %d", n.Name, len(n.Args))
		}
		v := clock(c.clock.ticks())
		return func(*frame) any { return v }, nil
	}
	b, ok := builtins[n.Name]
	if !ok {
		return nil, compileErr("unknown function %s", n.Name)
	}
	if len(n.Args) < b.min || (b.max >= 0 && len(n.Args) > b.max) {
		want := fmt.Sprint(b.min)
		switch {
		case b.max < 0:
			want = fmt.Sprintf("at least %d", b.min)
		case b.max != b.min:
			want = fmt.Sprintf("%d to %d", b.min, b.max)
		}
		return nil, compileErr("%s takes %s arguments, got %d", n.Name, want, len(n.Args))
	}
	args, err := c.exprs(s, n.Args...)
	if err != nil {
		return nil, err
	}
	impl := b.fn
	return func(f *frame) any {
		vals := make([]any, len(args))
		for i, a := range args {
			vals[i] = a(f)
		}
		return impl(vals)
	}, nil
}

func (c *compiler) subquery(n *Subquery, s *scope) (evalFn, error) {
	if c.grouped && !c.inAgg {
		return nil, compileErr("a subquery in a grouped SELECT must be inside an aggregate")
	}
	sub, err := compileQuery(n.Q, c.params, c.clock, s, levelSub)
	if err != nil {
		return nil, err
	}
	switch n.Kind {
	case "EXISTS":
		return func(f *frame) any {
			found := false
			sub.rows(f, func(any) bool { found = true; return false })
			return found
		}, nil
	case "ARRAY":
		return func(f *frame) any {
			out := []any{}
			sub.rows(f, func(v any) bool { out = append(out, v); return true })
			return out
		}, nil
	default:
		return func(f *frame) any {
			var res any = Undefined
			sub.rows(f, func(v any) bool { res = v; return false })
			return res
		}, nil
	}
}

// isAggregateCall reports whether x calls an aggregate function: the one
// rule the compiler and Analyze share.
func isAggregateCall(x Expr) bool {
	call, ok := x.(*Call)
	return ok && aggregateNames[call.Name]
}

// hasAggregate reports whether e calls an aggregate outside subqueries.
func hasAggregate(e Expr) bool {
	found := false
	walk(e, func(x Expr) bool {
		found = found || isAggregateCall(x)
		_, sub := x.(*Subquery)
		return !found && !sub
	})
	return found
}

// aggregated reports whether q's results are groups: it has GROUP BY, or
// its SELECT calls an aggregate outside subqueries.
func aggregated(q *Query) bool {
	if len(q.GroupBy) > 0 {
		return true
	}
	for _, it := range q.Items {
		if hasAggregate(it.X) {
			return true
		}
	}
	return false
}

// walk visits e and its children (depth first) while visit returns true;
// it does not enter subqueries.
func walk(e Expr, visit func(Expr) bool) {
	if e == nil || !visit(e) {
		return
	}
	eachOperand(e, func(x *Expr) { walk(*x, visit) })
}

// itemName is the property name a SELECT item gets without an alias.
func itemName(it SelectItem, pos int) string {
	if it.Alias != "" {
		return it.Alias
	}
	if n, ok := inferredAlias(it.X); ok {
		return n
	}
	return fmt.Sprintf("$%d", pos)
}

// inferredAlias is the name an expression gives what it reads when no
// alias is written, in a SELECT item or a FROM or JOIN source: a name, or
// a path's last property name (c.a.b: b, c["x y"]: x y); none (ok false)
// for anything else (a subquery, a path ending in a number or parameter
// index).
func inferredAlias(x Expr) (name string, ok bool) {
	switch n := x.(type) {
	case *Member:
		return n.Name, true
	case *Ident:
		return n.Name, true
	case *Index:
		if lit, ok := n.Index.(*Literal); ok {
			if s, ok := lit.Value.(string); ok {
				return s, true
			}
		}
	}
	return "", false
}

// itemNames names every SELECT item; unnamed expressions are $1, $2, ...
// in order. Duplicate names are an error.
func itemNames(items []SelectItem) ([]string, error) {
	names := make([]string, len(items))
	seen := map[string]bool{}
	unnamed := 0
	for i, it := range items {
		n := itemName(it, 0)
		if n == "$0" {
			unnamed++
			n = fmt.Sprintf("$%d", unnamed)
		}
		if seen[n] {
			return nil, compileErr("the SELECT clause names %q twice; give one an alias with AS", n)
		}
		seen[n] = true
		names[i] = n
	}
	return names, nil
}
