package query

import (
	"errors"
	"fmt"
)

// The limits a query is checked against before any work is done, as Cosmos
// DB documents them where it does (concepts-limits, "SQL query limits"): the
// text's length, the ANDs and ORs of a query and the arguments of an IN.
// Cosmos DB documents no depth; MaxDepth bounds how deep the engine's
// recursive passes (compile, format, plan) go, so a hostile query is refused
// with an error instead of exhausting the stack. The parser enforces every
// one of them while it reads, so a refused query costs no more than the
// text up to where it went past the limit.
const (
	// MaxQueryBytes is the longest query text Parse reads (Cosmos DB: 512 KB).
	MaxQueryBytes = 512 << 10
	// MaxDepth is the deepest expression tree Parse accepts: the longest
	// path from a clause to a leaf, where every operator of a chain
	// (a + b + c, a AND b AND c, c.a.b.c, c[0][1]) counts as a level.
	MaxDepth = 4096
	// MaxNesting is how deeply brackets, calls, constructors and subqueries
	// may nest.
	MaxNesting = 200
	// MaxAnds and MaxOrs are the most AND and OR operators in one query,
	// subqueries included (Cosmos DB: 2000 each).
	MaxAnds = 2000
	MaxOrs  = 2000
	// MaxInList is the most values one IN list holds (Cosmos DB: 6000).
	MaxInList = 6000
	// DefaultMemoryBudget is the most memory, in bytes as the engine
	// estimates it, one query's GROUP BY groups, DISTINCT set or ORDER BY
	// rows may hold at once before it fails with a *LimitError. Each
	// grouping, deduplicating or sorting step has its own budget.
	DefaultMemoryBudget = 128 << 20
)

// ErrLimit matches (errors.Is) every *LimitError.
var ErrLimit = errors.New("query: limit exceeded")

// LimitError is a query refused because it exceeds one of the engine's
// limits: at parse time (text, depth, nesting, ANDs, ORs, IN list) or while
// running (memory). It matches ErrLimit with errors.Is.
type LimitError struct {
	Limit string // what is limited, e.g. "query text bytes", "IN list length"
	Max   int64  // the limit
	Got   int64  // what the query has or needs (at least); 0 when unknown
	Pos   int    // byte offset in the query text where it was found; -1 when none
}

// Error implements error.
func (e *LimitError) Error() string {
	at := ""
	if e.Pos >= 0 {
		at = fmt.Sprintf(" at byte %d", e.Pos)
	}
	if e.Got > 0 {
		return fmt.Sprintf("%v: %s is %d%s, the limit is %d", ErrLimit, e.Limit, e.Got, at, e.Max)
	}
	return fmt.Sprintf("%v: %s exceeds %d%s", ErrLimit, e.Limit, e.Max, at)
}

// Is reports whether target is ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// budget counts the memory one grouping, deduplicating or sorting step
// holds, as estimated by its callers; charge panics with a *LimitError
// past max, which runTop returns as the query's error. A budget whose max
// is 0 bounds nothing.
type budget struct {
	used, max int64
}

// Estimated overheads, in bytes, of what the steps keep besides the values
// themselves: a map entry, a group with its accumulators, a sort row.
const (
	mapEntryBytes = 48
	groupBytes    = 64
	accBytes      = 48
	sortRowBytes  = 80
)

func (b *budget) charge(n int64) {
	if err := b.add(n); err != nil {
		panic(err)
	}
}

// add counts n more bytes, or returns the *LimitError past max.
func (b *budget) add(n int64) error {
	if b == nil || b.max <= 0 { // no budget: a limiter made outside a pipeline
		return nil
	}
	b.used += n
	if b.used > b.max {
		return &LimitError{Limit: "memory held by GROUP BY, DISTINCT or ORDER BY (bytes, estimated)", Max: b.max, Got: b.used, Pos: -1}
	}
	return nil
}

// sizeOf estimates the bytes a decoded JSON value holds.
func sizeOf(v any) int64 {
	switch x := v.(type) {
	case string:
		return 16 + int64(len(x))
	case []any:
		n := int64(24 + 16*len(x))
		for _, e := range x {
			n += sizeOf(e)
		}
		return n
	case map[string]any:
		n := int64(48)
		for k, e := range x {
			n += 32 + int64(len(k)) + sizeOf(e)
		}
		return n
	case nil:
		return 0
	}
	return 16
}
