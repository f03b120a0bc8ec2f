package query

import (
	"errors"
	"fmt"
)

// MaxStringBytes is the longest string, in bytes of UTF-8, that a string
// function (CONCAT, REPLACE, LOWER, UPPER...) or the || operator may
// produce: 2 MiB, Cosmos DB's maximum item size, since no document (and no
// result of one) can hold a longer string. The length is computed from the
// arguments before the string is built, so a query that would exceed it
// costs no more memory than its arguments; it fails with a
// *StringTooLongError. REPLICATE has its own documented limit, 10,000
// characters, past which it is undefined (MaxReplicateChars).
const MaxStringBytes = 2 << 20

// MaxReplicateChars is REPLICATE's documented result limit: a result
// longer than 10,000 characters is undefined (Cosmos DB's reference for
// REPLICATE: length(string_expr) * numeric_expr <= 10,000).
const MaxReplicateChars = 10000

// ErrStringTooLong matches (errors.Is) the *StringTooLongError a query
// fails with when a string function's result would exceed MaxStringBytes.
var ErrStringTooLong = errors.New("query: string result too long")

// StringTooLongError is the error of a query whose string function or ||
// operator would produce more than Limit bytes; nothing was built.
type StringTooLongError struct {
	Function string // CONCAT, REPLACE, ..., or "||"
	Length   int    // bytes the result would have had
	Limit    int    // MaxStringBytes
}

// Error implements error.
func (e *StringTooLongError) Error() string {
	return fmt.Sprintf("%v: %s would produce %d bytes, more than the limit of %d (Cosmos DB's maximum item size)",
		ErrStringTooLong, e.Function, e.Length, e.Limit)
}

// Is reports whether target is ErrStringTooLong.
func (e *StringTooLongError) Is(target error) bool { return target == ErrStringTooLong }

// checkStringLen stops the query (the evaluator's panic, recovered into an
// error by Execute, Values and Merger.Results) when a result of n bytes
// would exceed MaxStringBytes.
func checkStringLen(fn string, n int) {
	if n > MaxStringBytes || n < 0 {
		panic(&StringTooLongError{Function: fn, Length: n, Limit: MaxStringBytes})
	}
}

// evalError turns a value recovered from an evaluation panic into the
// query's error: a limit's typed error as it is, anything else (a bug in
// the engine) as an internal error.
func evalError(r any) error {
	switch e := r.(type) {
	case *StringTooLongError:
		return e
	case *LimitError: // a memory budget ran out (budget.charge)
		return e
	}
	return fmt.Errorf("query: internal error while evaluating the query: %v", r)
}
