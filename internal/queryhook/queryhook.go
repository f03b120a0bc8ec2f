// Package queryhook reaches three functions of package query that the
// router, the local evaluator and the embedded store need but a user does
// not: binding the clock functions of a parsed query to one instant, and
// the canonical text that DISTINCT compares. Package query sets them in its
// init (the way grpc's internal package reaches unexported functions), so
// they stay out of query's exported API. Any package that imports query may
// call them; before query is linked in they are nil.
package queryhook

import "time"

var (
	// ReadsClock reports whether q, a *query.Query, (or a subquery of it)
	// calls GetCurrentDateTime, GetCurrentTicks, GetCurrentTimestamp or
	// their …Static forms. It reads the tree only: one walk.
	ReadsClock func(q any) bool

	// BindClock replaces every clock call in q, a *query.Query, by its
	// value at now, so the query's text carries the instant: every
	// collection, page and backend then reads the same time. It reports
	// whether it replaced anything. Cost: one walk of the tree.
	BindClock func(q any, now time.Time) bool

	// DistinctKey returns a text equal for equal query results (numbers by
	// value, objects whatever their key order), for DISTINCT. It costs one
	// canonical encoding of v.
	DistinctKey func(v any) string
)
