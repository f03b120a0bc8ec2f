package localquery

import (
	"context"
	"errors"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/store"
)

// TokenVersion is the version of the Token docshard writes.
const TokenVersion = 1

// Token is the continuation token of a query a store pages through itself
// (base64url JSON, cursor.Encode): the binding it was issued for (Hash's
// String), the cursor of the results kept for it (C, 0: none), the
// results already returned (O) and, for a page of a query a service runs
// (the Cosmos DB backend's service mode), the service's own token of the
// page being read (ST).
type Token struct {
	V    int    `json:"v"`
	Hash string `json:"h"`
	ST   string `json:"s,omitempty"`
	C    uint64 `json:"c"`
	O    int    `json:"o"`
}

// Resume reads the continuation token of a query bound to hash ("" means
// the first page) in operation op on collection l. A token that is not
// one of ours, of another version or with a negative offset is
// malformed, and a token issued for another binding is refused: either
// is a *store.Error of kind store.ErrBadRequest quoting the token's start.
func Resume(op, l, continuation, hash string) (Token, error) {
	if continuation == "" {
		return Token{V: TokenVersion, Hash: hash}, nil
	}
	var t Token
	if err := cursor.Decode(continuation, &t); err != nil || t.V != TokenVersion || t.O < 0 {
		return Token{}, BadToken(op, l, continuation, "malformed")
	}
	if t.Hash != hash {
		return Token{}, BadToken(op, l, continuation, "issued for another query, parameters, partition key or collection")
	}
	return t, nil
}

// Next returns the token of the page that starts at result o of the
// results kept under cursor id.
func (t Token) Next(id uint64, o int) string {
	return cursor.Encode(Token{V: TokenVersion, Hash: t.Hash, C: id, O: o})
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
