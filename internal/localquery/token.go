package localquery

import (
	"context"
	"errors"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/store"
)

// TokenVersion is the version of the Token docshard writes. Version 1
// tokens resumed a query whose results were gone at an offset into a
// re-run, which documents deleted since could shift; they are refused.
const TokenVersion = 2

// Token is the continuation token of a query a store pages through itself
// (base64url JSON, cursor.Encode): the binding it was issued for (Hash's
// String), the cursor of the results kept for it (C, 0: none) and the
// results of that cursor already returned (O); where the page stands in
// the collection (P, nil for a query whose results have no positions:
// Shape's Whole) and how many results its TOP or LIMIT still allows (L,
// nil for no bound); and, for a page of a query a service runs (the
// Cosmos DB backend's service mode), the service's own token of the page
// being read (ST) and, when the service page is put in _rid order, the
// _rid of the last item taken from it (R) and a digest of the token the
// service gave for the page after it (N), which tells whether a re-read
// of the page ends where the first read did. For results without positions,
// W names the state of the collection they were computed over (the
// embedded store: its process and the collection's version).
//
// A page whose cursor is still kept reads on from it (C, O); otherwise it
// re-runs the query and resumes strictly after P, taking at most L; a
// query whose results have no positions re-runs only over the same state
// W, where the offset O is exact, and is refused otherwise (Restart).
type Token struct {
	V    int    `json:"v"`
	Hash string `json:"h"`
	ST   string `json:"s,omitempty"`
	R    string `json:"r,omitempty"`
	N    string `json:"n,omitempty"`
	C    uint64 `json:"c,omitempty"`
	O    int    `json:"o,omitempty"`
	P    *Pos   `json:"p,omitempty"`
	L    *int   `json:"l,omitempty"`
	W    string `json:"w,omitempty"`
}

// Place is where a page ended, for the next page's token: its position
// (nil for none), the results its TOP or LIMIT still allows (-1: no
// bound) and, for results without positions, the state they were
// computed over ("" for unknown).
type Place struct {
	P     *Pos
	Left  int
	State string
}

// Resume reads the continuation token of a query bound to hash ("" means
// the first page) in operation op on collection l. A token that is not
// one of ours, of another version or with a negative offset or bound is
// malformed (one of version 1, which docshard wrote before, says so), and
// a token issued for another binding is refused: either is a
// *store.Error of kind store.ErrBadRequest quoting the token's start.
func Resume(op, l, continuation, hash string) (Token, error) {
	if continuation == "" {
		return Token{V: TokenVersion, Hash: hash}, nil
	}
	var t Token
	if err := cursor.Decode(continuation, &t); err != nil {
		return Token{}, BadToken(op, l, continuation, "malformed")
	}
	if t.V == 1 {
		return Token{}, BadToken(op, l, continuation, "written by an earlier docshard (version 1), which resumed at an offset that deleted documents could shift: run the query again from its first page")
	}
	if t.V != TokenVersion || t.O < 0 || t.L != nil && *t.L < 0 || t.P != nil && t.P.Rows < 0 {
		return Token{}, BadToken(op, l, continuation, "malformed")
	}
	if t.Hash != hash {
		return Token{}, BadToken(op, l, continuation, "issued for another query, parameters, partition key or collection")
	}
	return t, nil
}

// Next returns the token of the page that starts at result o of the
// results kept under cursor id (0: none), at place at.
func (t Token) Next(id uint64, o int, at Place) string {
	next := Token{V: TokenVersion, Hash: t.Hash, C: id, O: o, P: at.P, W: at.State}
	if at.Left >= 0 {
		next.L = &at.Left
	}
	return cursor.Encode(next)
}

// Left returns how many results the token's TOP or LIMIT still allows,
// -1 for no bound.
func (t Token) Left() int {
	if t.L == nil {
		return -1
	}
	return *t.L
}

// BadToken is the error for a continuation token s that cannot be read
// on from, and why: a *store.Error of kind store.ErrBadRequest quoting
// the token's first 40 characters.
func BadToken(op, l, s, why string) error {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return store.Errorf(store.ErrBadRequest, op, l, "", "continuation token %q: %s", s, why)
}

// RunErr reports a query that failed while running: the caller's context
// ended (wrapped as it is, no kind), or the query cannot run on these
// documents (store.ErrBadRequest).
func RunErr(op, l string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &store.Error{Op: op, Link: l, Err: err}
	}
	return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
}
