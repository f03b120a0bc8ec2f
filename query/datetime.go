package query

import (
	"math"
	"strings"
	"time"
)

// Date and time functions, as Cosmos DB documents them. Date and time
// values are strings in ISO 8601, UTC, written YYYY-MM-DDThh:mm:ss.fffffffZ
// (always 7 fractional digits); the functions read YYYY-MM-DD optionally
// followed by Thh:mm, :ss and a fraction of 1 to 7 digits, and an optional
// Z (no other offset), between the years 0001 and 9999. Ticks are 100
// nanoseconds since the Unix epoch and timestamps milliseconds since it
// (both may be negative). A malformed date, an unknown part, a number that
// is not an integer where one is needed, or a result outside the years
// 0001 to 9999 is undefined, never an error.

const (
	ticksPerMicrosecond = 10
	ticksPerMillisecond = 10_000
	ticksPerSecond      = 10_000_000
	ticksPerMinute      = 60 * ticksPerSecond
	ticksPerHour        = 60 * ticksPerMinute
	ticksPerDay         = 24 * ticksPerHour
)

// The representable range, in ticks since the Unix epoch.
var (
	minTicks = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix() * ticksPerSecond
	maxTicks = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()*ticksPerSecond + ticksPerSecond - 1
)

// datePart is a unit a date and time function works in.
type datePart int

const (
	partYear datePart = iota
	partMonth
	partDay
	partHour
	partMinute
	partSecond
	partMillisecond
	partMicrosecond
	partNanosecond
)

// dateParts are the names Cosmos DB accepts for each part (case-insensitive).
var dateParts = map[string]datePart{
	"year": partYear, "yyyy": partYear, "yy": partYear,
	"month": partMonth, "mm": partMonth, "m": partMonth,
	"day": partDay, "dd": partDay, "d": partDay,
	"hour": partHour, "hh": partHour,
	"minute": partMinute, "mi": partMinute, "n": partMinute,
	"second": partSecond, "ss": partSecond, "s": partSecond,
	"millisecond": partMillisecond, "ms": partMillisecond,
	"microsecond": partMicrosecond, "mcs": partMicrosecond,
	"nanosecond": partNanosecond, "ns": partNanosecond,
}

// fixedTicks is the length in ticks of the parts of fixed length (day and
// shorter; nanoseconds are finer than a tick: 0).
var fixedTicks = map[datePart]int64{
	partDay: ticksPerDay, partHour: ticksPerHour, partMinute: ticksPerMinute,
	partSecond: ticksPerSecond, partMillisecond: ticksPerMillisecond,
	partMicrosecond: ticksPerMicrosecond,
}

func partOf(v any) (datePart, bool) {
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	p, ok := dateParts[strings.ToLower(s)]
	return p, ok
}

// parseDateTime reads a date and time string into ticks since the Unix
// epoch; ok is false for anything but the accepted forms.
func parseDateTime(v any) (int64, bool) {
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	s = strings.TrimSuffix(s, "Z")
	num := func(i, n int) (int, bool) {
		if i+n > len(s) {
			return 0, false
		}
		x := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			x = x*10 + int(c-'0')
		}
		return x, true
	}
	sep := func(i int, c byte) bool { return i < len(s) && s[i] == c }
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 2)
	day, ok3 := num(8, 2)
	if !ok1 || !ok2 || !ok3 || !sep(4, '-') || !sep(7, '-') {
		return 0, false
	}
	var hour, minute, second, frac int
	i := 10
	if i < len(s) {
		var okh, okm bool
		hour, okh = num(11, 2)
		minute, okm = num(14, 2)
		if !sep(10, 'T') || !okh || !okm || !sep(13, ':') {
			return 0, false
		}
		i = 16
		if sep(i, ':') {
			var oks bool
			if second, oks = num(17, 2); !oks {
				return 0, false
			}
			i = 19
			if sep(i, '.') {
				n := len(s) - i - 1
				if n < 1 || n > 7 {
					return 0, false
				}
				f, okf := num(i+1, n)
				if !okf {
					return 0, false
				}
				for ; n < 7; n++ {
					f *= 10
				}
				frac, i = f, len(s)
			}
		}
	}
	if i != len(s) || year < 1 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59 {
		return 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, second, 0, time.UTC)
	if t.Day() != day { // 31 April and the like
		return 0, false
	}
	return t.Unix()*ticksPerSecond + int64(frac), true
}

// splitTicks returns a tick count's time (to the second) and its
// fraction of a second in ticks.
func splitTicks(ticks int64) (time.Time, int64) {
	sec, frac := floorDiv(ticks, ticksPerSecond)
	return time.Unix(sec, 0).UTC(), frac
}

// formatTicks writes ticks as YYYY-MM-DDThh:mm:ss.fffffffZ, or Undefined
// outside the years 0001 to 9999.
func formatTicks(ticks int64) any {
	if ticks < minTicks || ticks > maxTicks {
		return Undefined
	}
	t, frac := splitTicks(ticks)
	b := make([]byte, 0, 28)
	b = t.AppendFormat(b, "2006-01-02T15:04:05")
	b = append(b, '.')
	for d := int64(1_000_000); d >= 1; d /= 10 {
		b = append(b, byte('0'+frac/d%10))
	}
	return string(append(b, 'Z'))
}

func floorDiv(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// integer reads a number that must be an integer within ±2^62 (ticks
// of today are past 2^53: as float64 they keep 2 of their last digits'
// precision, as in Cosmos DB).
func integer(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

// truncInt reads a number truncated toward zero, within ±2^62.
func truncInt(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

// addMonths adds n months to ticks, keeping the time of day and clamping
// the day to the last of the month (31 January plus a month is 28 or 29
// February), as Cosmos DB and SQL Server do.
func addMonths(ticks, n int64) (int64, bool) {
	if n > 12*10000 || n < -12*10000 {
		return 0, false
	}
	t, frac := splitTicks(ticks)
	months := int64(t.Year())*12 + int64(t.Month()) - 1 + n
	year, month := int(months/12), time.Month(months%12+1)
	if months < 0 {
		return 0, false
	}
	last := time.Date(year, month+1, 0, 0, 0, 0, 0, time.UTC).Day()
	day := min(t.Day(), last)
	u := time.Date(year, month, day, t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
	return u.Unix()*ticksPerSecond + frac, true
}

// dateTimeAdd is DateTimeAdd(part, number, dateTime).
func dateTimeAdd(a []any) any {
	part, ok1 := partOf(a[0])
	n, ok2 := truncInt(a[1])
	ticks, ok3 := parseDateTime(a[2])
	if !ok1 || !ok2 || !ok3 {
		return Undefined
	}
	var out int64
	var ok bool
	switch part {
	case partYear:
		out, ok = addMonths(ticks, n*12)
	case partMonth:
		out, ok = addMonths(ticks, n)
	case partNanosecond:
		out, ok = ticks+n/100, true
	default:
		unit := fixedTicks[part]
		if n > (maxTicks-minTicks)/unit || n < -(maxTicks-minTicks)/unit {
			return Undefined
		}
		out, ok = ticks+n*unit, true
	}
	if !ok {
		return Undefined
	}
	return formatTicks(out)
}

// dateTimeDiff is DateTimeDiff(part, start, end): how many boundaries of
// part lie between start and end (signed), as SQL Server's DATEDIFF
// counts them: DateTimeDiff("yyyy", "2020-12-31T23:59:59Z",
// "2021-01-01T00:00:00Z") is 1.
func dateTimeDiff(a []any) any {
	part, ok1 := partOf(a[0])
	start, ok2 := parseDateTime(a[1])
	end, ok3 := parseDateTime(a[2])
	if !ok1 || !ok2 || !ok3 {
		return Undefined
	}
	switch part {
	case partYear, partMonth:
		s, _ := splitTicks(start)
		e, _ := splitTicks(end)
		d := int64(e.Year() - s.Year())
		if part == partMonth {
			d = d*12 + int64(e.Month()) - int64(s.Month())
		}
		return float64(d)
	case partNanosecond:
		return float64(end-start) * 100
	}
	unit := fixedTicks[part]
	s, _ := floorDiv(start, unit)
	e, _ := floorDiv(end, unit)
	return float64(e - s)
}

// dateTimePart is DateTimePart(part, dateTime): the part's value; the
// fractional parts give the whole fraction of a second in their unit
// (DateTimePart("mcs", "2020-01-02T03:04:05.6789123Z") is 678912).
func dateTimePart(a []any) any {
	part, ok1 := partOf(a[0])
	ticks, ok2 := parseDateTime(a[1])
	if !ok1 || !ok2 {
		return Undefined
	}
	t, frac := splitTicks(ticks)
	switch part {
	case partYear:
		return float64(t.Year())
	case partMonth:
		return float64(t.Month())
	case partDay:
		return float64(t.Day())
	case partHour:
		return float64(t.Hour())
	case partMinute:
		return float64(t.Minute())
	case partSecond:
		return float64(t.Second())
	case partMillisecond:
		return float64(frac / ticksPerMillisecond)
	case partMicrosecond:
		return float64(frac / ticksPerMicrosecond)
	default:
		return float64(frac * 100)
	}
}

// dateTimeFromParts is DateTimeFromParts(year, month, day [, hour [,
// minute [, second [, fraction in ticks]]]]).
func dateTimeFromParts(a []any) any {
	var v [7]int64
	limits := [7][2]int64{{1, 9999}, {1, 12}, {1, 31}, {0, 23}, {0, 59}, {0, 59}, {0, ticksPerSecond - 1}}
	for i, x := range a {
		n, ok := integer(x)
		if !ok || n < limits[i][0] || n > limits[i][1] {
			return Undefined
		}
		v[i] = n
	}
	t := time.Date(int(v[0]), time.Month(v[1]), int(v[2]), int(v[3]), int(v[4]), int(v[5]), 0, time.UTC)
	if int64(t.Day()) != v[2] {
		return Undefined
	}
	return formatTicks(t.Unix()*ticksPerSecond + v[6])
}

// dateTimeBin is DateTimeBin(dateTime, part [, size [, start]]): the
// start of the bin of size parts (days to nanoseconds) holding dateTime,
// counting bins from start (default the Unix epoch).
func dateTimeBin(a []any) any {
	ticks, ok1 := parseDateTime(a[0])
	part, ok2 := partOf(a[1])
	if !ok1 || !ok2 {
		return Undefined
	}
	size := int64(1)
	if len(a) > 2 {
		n, ok := integer(a[2])
		if !ok || n <= 0 {
			return Undefined
		}
		size = n
	}
	var origin int64
	if len(a) > 3 {
		o, ok := parseDateTime(a[3])
		if !ok {
			return Undefined
		}
		origin = o
	}
	var width int64
	switch part {
	case partYear, partMonth:
		return Undefined // the coarsest granularity is days
	case partNanosecond:
		if width = size / 100; width == 0 {
			return formatTicks(ticks) // bins finer than a tick
		}
	default:
		if size > (maxTicks-minTicks)/fixedTicks[part] {
			return formatTicks(origin)
		}
		width = size * fixedTicks[part]
	}
	if width <= 0 {
		return Undefined
	}
	q, _ := floorDiv(ticks-origin, width)
	return formatTicks(origin + q*width)
}

// dateTimeTo builds DateTimeToTicks (unit 1) and DateTimeToTimestamp
// (unit ticksPerMillisecond): the date as a count of units since the Unix
// epoch, truncated.
func dateTimeTo(unit int64) func([]any) any {
	return func(a []any) any {
		ticks, ok := parseDateTime(a[0])
		if !ok {
			return Undefined
		}
		return float64(ticks / unit)
	}
}

// dateTimeFrom builds TicksToDateTime (unit 1) and TimestampToDateTime
// (unit ticksPerMillisecond): a count of units since the Unix epoch as a
// date, truncating a fraction.
func dateTimeFrom(unit int64) func([]any) any {
	return func(a []any) any {
		n, ok := truncInt(a[0])
		if !ok || n > maxTicks/unit || n < minTicks/unit {
			return Undefined
		}
		return formatTicks(n * unit)
	}
}

// clockNames are the functions that read the clock: one instant per
// compiled query (see Compile), the …Static forms alike.
var clockNames = map[string]func(ticks int64) any{
	"GETCURRENTDATETIME":        formatTicks,
	"GETCURRENTTICKS":           func(t int64) any { return float64(t) },
	"GETCURRENTTIMESTAMP":       func(t int64) any { return float64(t / ticksPerMillisecond) },
	"GETCURRENTDATETIMESTATIC":  formatTicks,
	"GETCURRENTTICKSSTATIC":     func(t int64) any { return float64(t) },
	"GETCURRENTTIMESTAMPSTATIC": func(t int64) any { return float64(t / ticksPerMillisecond) },
}

// instant is the one time a compiled query reads the clock at, the first
// time one of the clock functions is compiled.
type instant struct {
	read bool
	at   int64 // ticks
}

// ticks returns the instant, reading the clock the first time.
func (i *instant) ticks() int64 {
	if !i.read {
		t := time.Now()
		i.at, i.read = t.Unix()*ticksPerSecond+int64(t.Nanosecond())/100, true
	}
	return i.at
}

// readsClock reports whether q (or a subquery of it) calls
// GetCurrentDateTime, GetCurrentTicks, GetCurrentTimestamp or their
// …Static forms. It reads the tree only: one walk. Other packages of this
// module reach it as queryhook.ReadsClock.
func readsClock(q *Query) bool {
	found := false
	inspectQuery(q, func(e Expr) {
		if c, ok := e.(*Call); ok && clockNames[c.Name] != nil {
			found = true
		}
	})
	return found
}

// bindClock replaces, in q itself, every call of a clock function
// (GetCurrentDateTime, GetCurrentTicks, GetCurrentTimestamp and their
// …Static forms) by its value at now, so that the query's text (Format)
// carries the instant: the router binds one instant per query, and every
// collection, page and backend (Cosmos DB included) then reads the same
// time. It reports whether it replaced anything. Cost: one walk of the
// tree. Other packages of this module reach it as queryhook.BindClock.
func bindClock(q *Query, now time.Time) bool {
	ticks := now.Unix()*ticksPerSecond + int64(now.Nanosecond())/100
	bound := false
	mapQuery(q, func(e Expr) Expr {
		if c, ok := e.(*Call); ok && len(c.Args) == 0 {
			if clock := clockNames[c.Name]; clock != nil {
				bound = true
				return &Literal{Value: clock(ticks)}
			}
		}
		return e
	})
	return bound
}

// eachClause calls fn with each clause's expression slot of q: the SELECT
// items, FROM and JOIN sources, WHERE (nil when there is none), GROUP BY
// and ORDER BY.
func eachClause(q *Query, fn func(*Expr)) {
	for i := range q.Items {
		fn(&q.Items[i].X)
	}
	if q.From != nil {
		fn(&q.From.Source)
	}
	for i := range q.Joins {
		fn(&q.Joins[i].Source)
	}
	fn(&q.Where)
	for i := range q.GroupBy {
		fn(&q.GroupBy[i])
	}
	for i := range q.OrderBy {
		fn(&q.OrderBy[i].X)
	}
}

// mapQuery replaces each expression of q (and of its subqueries), children
// first, by what f returns for it.
func mapQuery(q *Query, f func(Expr) Expr) {
	if q == nil {
		return
	}
	eachClause(q, func(x *Expr) { *x = mapExpr(*x, f) })
}

// inspectQuery calls f with each expression of q (and of its subqueries),
// children first, and writes nothing: a tree shared between goroutines
// (a store's prepared query) may be inspected by several at once.
func inspectQuery(q *Query, f func(Expr)) {
	if q == nil {
		return
	}
	eachClause(q, func(x *Expr) { inspectExpr(*x, f) })
}

// inspectExpr is inspectQuery for one expression.
func inspectExpr(e Expr, f func(Expr)) {
	if e == nil {
		return
	}
	eachOperand(e, func(x *Expr) { inspectExpr(*x, f) })
	if n, ok := e.(*Subquery); ok {
		inspectQuery(n.Q, f)
	}
	f(e)
}

// mapExpr is mapQuery for one expression; nil stays nil.
func mapExpr(e Expr, f func(Expr) Expr) Expr {
	if e == nil {
		return nil
	}
	eachOperand(e, func(x *Expr) { *x = mapExpr(*x, f) })
	if n, ok := e.(*Subquery); ok {
		mapQuery(n.Q, f)
	}
	return f(e)
}
