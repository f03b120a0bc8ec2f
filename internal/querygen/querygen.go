// Package querygen generates random documents and random queries over
// them, for the differential tests: the query package's (one evaluation
// against a merge of evaluations over parts of the documents) and the
// router's oracle (one collection against several, on every backend). One
// generator serves both, so a construct added here is tested by both.
//
// The same *rand.Rand state gives the same documents and queries.
package querygen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/docshard/docshard/store"
)

var strs = []string{"apple", "Banana", "cherry", "apple pie", "", "zebra", "Éclair", "42"}

// dates are the values of t: ISO 8601 in Cosmos DB's form and shorter,
// month ends, a leap day, and strings that are not dates.
var dates = []string{"2024-01-31T10:00:00.0000000Z", "2024-02-29T23:59:59.9999999Z", "2023-12-31",
	"2024-03-01T00:00:00Z", "2024-01-01T00:00:00.5Z", "1969-12-31T23:59:59Z", "not a date", "2024-13-01"}

// square is a GeoJSON polygon around part of the documents' locations.
const square = `{"type": "Polygon", "coordinates": [[[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]]]}`

// Docs returns n documents keyed by /pk (40 values, "k00".."k39") with
// unique ids ("d0000"...) and fields of mixed types, each sometimes
// missing: n (numbers, mostly, and null, booleans, strings, arrays,
// objects), s (strings, mostly), g (strings, a number, null), b
// (booleans), tags (arrays of strings and a number), o (an object with a
// half-integer x, or without it), t (dates, and strings that are not) and
// loc (GeoJSON points). Numbers are integers and halves, so sums are exact
// in any order.
func Docs(rng *rand.Rand, n int) []map[string]any {
	val := func() any {
		switch rng.IntN(12) {
		case 0:
			return nil
		case 1:
			return rng.IntN(2) == 0
		case 2:
			return strs[rng.IntN(len(strs))]
		case 3:
			return []any{1.0, "x"}
		case 4:
			return map[string]any{"x": 1.0}
		default:
			return float64(rng.IntN(40) - 10)
		}
	}
	out := make([]map[string]any, n)
	for i := range out {
		m := map[string]any{"id": fmt.Sprintf("d%04d", i), "pk": fmt.Sprintf("k%02d", rng.IntN(40))}
		if rng.IntN(8) != 0 {
			m["n"] = val()
		}
		if rng.IntN(6) != 0 {
			if rng.IntN(5) == 0 {
				m["s"] = val()
			} else {
				m["s"] = strs[rng.IntN(len(strs))]
			}
		}
		if rng.IntN(5) != 0 {
			m["g"] = []any{"red", "green", "blue", 1.0, nil}[rng.IntN(5)]
		}
		if rng.IntN(3) != 0 {
			m["b"] = rng.IntN(2) == 0
		}
		if rng.IntN(3) != 0 {
			tags := []any{}
			for k := rng.IntN(4); k > 0; k-- {
				tags = append(tags, []any{"t1", "t2", "t3", 7.0}[rng.IntN(4)])
			}
			m["tags"] = tags
		}
		if rng.IntN(2) == 0 {
			o := map[string]any{}
			if rng.IntN(4) != 0 {
				o["x"] = float64(rng.IntN(10)) / 2
			}
			m["o"] = o
		}
		if rng.IntN(4) != 0 {
			m["t"] = dates[rng.IntN(len(dates))]
		}
		if rng.IntN(4) != 0 {
			m["loc"] = map[string]any{"type": "Point", "coordinates": []any{float64(rng.IntN(9)-4) / 2, float64(rng.IntN(9)-4) / 2}}
		}
		out[i] = m
	}
	return out
}

// Options qualify Query. A nil *Options means the default.
type Options struct {
	// Literals writes every value as a literal, for a caller that binds no
	// parameters; by default some values (in WHERE, and the counts of TOP,
	// OFFSET and LIMIT) are parameters @p0, @p1, ...
	Literals bool
}

// Query returns a random query over Docs documents, with its parameters,
// combining projections (*, VALUE, objects of computed values, JOIN),
// WHERE (with parameters), ORDER BY (one to three keys over mixed types,
// ASC/DESC), TOP, OFFSET/LIMIT (literals or parameters), DISTINCT, VALUE
// and object aggregates, GROUP BY (one or two keys) with aggregates, JOIN
// and FROM sources in every form (x IN a path or subquery, a correlated
// subquery, a path, a FROM subquery giving one row per document or rows
// looking across documents: some documents chosen across collections,
// DISTINCT rows, groups), and the date and time, clock, spatial and
// string-building functions (the clock only where no document's date is
// near now, so one evaluation and a merge of several agree whenever they
// run). Every query it returns can be merged.
func Query(rng *rand.Rand, opts *Options) store.Query {
	g := &gen{rng: rng, literals: opts != nil && opts.Literals}
	text := g.query()
	return store.Query{Text: text, Parameters: g.params}
}

// Text is Query's text, with literals only (Options.Literals).
func Text(rng *rand.Rand) string { return Query(rng, &Options{Literals: true}).Text }

func pick(rng *rand.Rand, xs ...string) string { return xs[rng.IntN(len(xs))] }

// gen builds one generated query and its parameters.
type gen struct {
	rng      *rand.Rand
	literals bool
	params   []store.Param
}

// param is v as a parameter, or as a literal with Options.Literals.
func (g *gen) param(v any) string {
	if g.literals {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err) // generated values are JSON
		}
		return string(b)
	}
	name := fmt.Sprintf("@p%d", len(g.params))
	g.params = append(g.params, store.Param{Name: name, Value: v})
	return name
}

// count is a TOP/OFFSET/LIMIT count, a literal or a parameter.
func (g *gen) count(n int) string {
	if g.rng.IntN(3) == 0 {
		return g.param(n)
	}
	return fmt.Sprint(n)
}

// join is a JOIN binding t to the tags of a document (or to the first
// one), in each form of Cosmos DB's grammar: x IN a path or a subquery, a
// correlated subquery, a path.
func (g *gen) join() string {
	return pick(g.rng, " JOIN t IN c.tags", " JOIN (SELECT VALUE t FROM t IN c.tags) AS t",
		" JOIN (SELECT VALUE t FROM t IN c.tags WHERE t != 't3') t", " JOIN (SELECT VALUE t FROM t IN c.tags WHERE t != 7) t",
		" JOIN t IN (SELECT VALUE c.tags)", " JOIN c.tags[0] AS t")
}

// rows is a FROM clause whose rows, named c, come from a subquery: one row
// per document (which merges like the documents), or rows looking across
// documents (some of them, distinct rows, groups: a query.Nested plan).
func (g *gen) rows() string {
	return pick(g.rng, " FROM (SELECT * FROM c) AS c", " FROM (SELECT VALUE r FROM root r WHERE IS_DEFINED(r.pk)) c",
		" FROM (SELECT VALUE c FROM c WHERE IS_DEFINED(c.n)) c",
		" FROM (SELECT VALUE x FROM (SELECT * FROM c) AS x) AS c",
		" FROM (SELECT TOP 150 * FROM c ORDER BY c.id DESC) AS c", " FROM (SELECT * FROM c ORDER BY c.n, c.id OFFSET 20 LIMIT 300) AS c",
		" FROM (SELECT DISTINCT c.g, c.n, c.s, c.tags FROM c) AS c",
		" FROM (SELECT c.g, COUNT(1) AS n, MAX(c.s) AS s FROM c GROUP BY c.g) c")
}

// scalar is a computed value of a document.
func (g *gen) scalar() string {
	return pick(g.rng, "c.id", "c.n", "c.s", "c.g", "c.b", "c.o", "c.o.x", "c.tags[0]", "c.n + 1", "UPPER(c.s)",
		"LENGTH(c.s)", "IS_NUMBER(c.n)", "c.n ?? -1", `{"a": c.n}`, "[c.n, c.s]", "[c.n, c.g]", "ARRAY_LENGTH(c.tags)",
		"c.n * 2", "c.s || '!'", "(c.b ? 1 : 0)", "ROUND(c.o.x)", "SUBSTRING(c.s, 1, 2)",
		`DateTimeAdd("mm", 1, c.t)`, `[DateTimeToTimestamp(c.t), DateTimePart("ns", c.t)]`,
		`ST_DISTANCE(c.loc, {"type": "Point", "coordinates": [1, 1]})`, `ST_ISVALIDDETAILED(c.loc)`, `REPLICATE(c.s, 3)`)
}

func (g *gen) predicate(depth int) string {
	rng := g.rng
	if depth < 2 && rng.IntN(3) == 0 {
		return fmt.Sprintf("(%s %s %s)", g.predicate(depth+1), pick(rng, "AND", "OR"), g.predicate(depth+1))
	}
	if depth < 2 && rng.IntN(8) == 0 {
		return "NOT (" + g.predicate(depth+1) + ")"
	}
	switch rng.IntN(20) {
	case 0:
		return fmt.Sprintf("c.n > %s", g.param(rng.IntN(30)-5))
	case 1:
		return fmt.Sprintf("c.s = %s", g.param(strs[rng.IntN(len(strs))]))
	case 2:
		return fmt.Sprintf("ARRAY_CONTAINS(%s, c.g)", g.param([]any{"red", 1.0}))
	case 3:
		return "NOT (c.b = true)"
	}
	return pick(rng,
		fmt.Sprintf("c.n > %d", rng.IntN(30)-5), fmt.Sprintf("c.n <= %d", rng.IntN(30)-5), fmt.Sprintf("c.n = %d", rng.IntN(10)),
		"c.s = 'apple'", `c.s != "zebra"`, "c.s < 'c'",
		"IS_DEFINED(c.n)", "NOT IS_DEFINED(c.s)", "IS_NULL(c.n)", "IS_STRING(c.s)",
		"c.n BETWEEN 0 AND 10", "c.s IN ('apple', 'cherry', 42)", "c.g IN ('red', 1)",
		"ARRAY_CONTAINS(c.tags, 't1')", "STARTSWITH(c.s, 'a')", "CONTAINS(c.s, 'an', true)",
		"c.b = true", "c.b", "(c.n ?? 0) > 3", "c.o.x >= 1.5", "c.s LIKE 'a%'", "c.pk < 'k20'", "c.n % 2 = 0",
		"EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 't2')",
		// Dates and times; the clock only where no document is near now.
		`DateTimePart("m", c.t) = 2`, `DateTimeDiff("dd", c.t, "2024-03-01") > 10`,
		`c.t < DateTimeAdd("dd", -30, GetCurrentDateTime())`, `DateTimeToTicks(c.t) < GetCurrentTicks()`,
		`DateTimeBin(c.t, "dd", 7) = "2024-01-25T00:00:00.0000000Z"`, `TicksToDateTime(DateTimeToTicks(c.t)) > "2024"`,
		// Spatial.
		"ST_WITHIN(c.loc, "+square+")", `ST_DISTANCE(c.loc, {"type": "Point", "coordinates": [0, 0]}) < 120000`,
		`ST_INTERSECTS(c.loc, {"type": "LineString", "coordinates": [[0, -2], [0, 2]]})`, "ST_ISVALID(c.loc)",
		// String results.
		`LENGTH(REPLICATE(c.s, 2000)) > 0`, `REPLACE(c.s, "a", "A") = "Apple"`)
}

func (g *gen) query() string {
	rng := g.rng
	where := ""
	if rng.IntN(3) != 0 {
		where = " WHERE " + g.predicate(0)
	}
	from := " FROM c"
	switch rng.IntN(12) {
	case 0:
		from = " FROM c" + g.join()
	case 1, 2:
		from = g.rows()
	}
	aggs := []string{"COUNT(1)", "COUNT(c.n)", "SUM(c.n)", "AVG(c.n)", "MIN(c.n)", "MAX(c.s)", "MIN(c.g)", "MAX(c.g)", "MAX(c.o.x)", "AVG(c.o.x)", "SUM(c.o.x)", "MAX(c.b)"}
	switch rng.IntN(10) {
	case 0:
		return fmt.Sprintf("SELECT VALUE %s%s%s", pick(rng, aggs...), from, where)
	case 1:
		return fmt.Sprintf("SELECT %s AS a, %s AS b%s%s", pick(rng, aggs...), pick(rng, aggs...), from, where)
	case 2:
		key := pick(rng, "c.g", "c.b", "c.s", "c.o.x", "c.n", `DateTimePart("m", c.t)`, `DateTimeBin(c.t, "dd", 30)`, "ST_WITHIN(c.loc, "+square+")")
		keys := key
		if rng.IntN(3) == 0 {
			keys += ", c.b"
		}
		top, tail := "", ""
		switch rng.IntN(5) {
		case 0:
			top = fmt.Sprintf("TOP %s ", g.count(rng.IntN(4)))
		case 1:
			tail = fmt.Sprintf(" OFFSET %s LIMIT %s", g.count(rng.IntN(3)), g.count(rng.IntN(4)))
		}
		distinct := ""
		if rng.IntN(6) == 0 {
			distinct = "DISTINCT "
		}
		if rng.IntN(4) == 0 {
			return fmt.Sprintf("SELECT %s%sVALUE %s%s%s GROUP BY %s%s", distinct, top, pick(rng, aggs...), from, where, keys, tail)
		}
		return fmt.Sprintf("SELECT %s%s%s AS k, COUNT(1) AS n, %s AS x%s%s GROUP BY %s%s", distinct, top, key, pick(rng, aggs...), from, where, keys, tail)
	case 3:
		return fmt.Sprintf("SELECT c.id, t FROM c%s%s", g.join(), where)
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	distinct := rng.IntN(6) == 0
	if distinct {
		b.WriteString("DISTINCT ")
	}
	limitKind := rng.IntN(4)
	if limitKind == 0 {
		fmt.Fprintf(&b, "TOP %s ", g.count(rng.IntN(30)))
	}
	var order []string
	if rng.IntN(3) != 0 {
		for k := 1 + rng.IntN(2); k > 0; k-- {
			order = append(order, pick(rng, "c.n", "c.s", "c.g", "c.o.x", "c.b", "c.pk", "c.o", "c.id", "LENGTH(c.s)", "c.n + 1"))
		}
		if !distinct && rng.IntN(3) != 0 {
			order = append(order, "c.id")
		}
	}
	join := ""
	if rng.IntN(8) == 0 {
		join = g.join()
	}
	switch {
	case distinct && len(order) > 0:
		// DISTINCT under ORDER BY must project what it orders by.
		var items []string
		for i, o := range order {
			items = append(items, fmt.Sprintf("%s AS o%d", o, i))
		}
		if rng.IntN(2) == 0 {
			items = append(items, pick(rng, "c.b AS extra", "c.g AS extra"))
		}
		b.WriteString(strings.Join(items, ", "))
	case distinct:
		b.WriteString(pick(rng, "VALUE c.s", "VALUE c.g", "c.s, c.b", "VALUE c.n", "c.o", "VALUE [c.b, c.g]"))
	case join != "" && rng.IntN(2) == 0:
		b.WriteString("VALUE t")
	case rng.IntN(4) == 0 && join == "":
		b.WriteString("*")
	case rng.IntN(3) == 0:
		b.WriteString("VALUE " + g.scalar())
	case rng.IntN(2) == 0:
		b.WriteString(pick(rng, "c.id, c.n", "c.id, c.s, c.g", "c.n AS num, c.tags", "c.id, c.o.x AS x, c.b", "c.s, c.id"))
	default:
		var items []string
		for k := 1 + rng.IntN(3); k > 0; k-- {
			items = append(items, fmt.Sprintf("%s AS p%d", g.scalar(), k))
		}
		b.WriteString(strings.Join(items, ", "))
	}
	if join == "" && rng.IntN(8) == 0 {
		b.WriteString(g.rows())
	} else {
		b.WriteString(" FROM c")
	}
	b.WriteString(join)
	b.WriteString(where)
	if len(order) > 0 {
		b.WriteString(" ORDER BY ")
		for i, o := range order {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(o)
			if rng.IntN(2) == 0 {
				b.WriteString(" DESC")
			}
		}
	}
	if limitKind == 1 {
		fmt.Fprintf(&b, " OFFSET %s LIMIT %s", g.count(rng.IntN(20)), g.count(rng.IntN(30)))
	}
	return b.String()
}
