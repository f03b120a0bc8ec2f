package localquery

import (
	"encoding/json"
	"fmt"

	"github.com/docshard/docshard/internal/jsontext"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// Pos is where a paged query stands in its collection: the last row a
// page returned, by the document it came from. A page whose results are
// gone (their cursor evicted, the store restarted) re-runs the query and
// resumes strictly after Pos, never at an offset into the new results,
// so documents deleted or created since cannot make it skip or repeat a
// row of a document that existed throughout.
type Pos struct {
	// Keys are, for a Sorted query, the row's ORDER BY values as
	// Shape.SortKey returns them: [{"v": value}, ...], {} for undefined.
	Keys json.RawMessage `json:"k,omitempty"`
	// Doc is the row's document's place in the feed order, as the store
	// writes it (the embedded store: its sequence number in decimal; the
	// local evaluator: FixedOrder's key).
	Doc string `json:"d"`
	// Rows is how many of that document's rows were returned (a JOIN
	// gives a document many).
	Rows int `json:"r,omitempty"`
}

// UnwrapKeys reads sort values wrapped as Shape.SortKey returns them (a
// decoded array of {"v": value} objects, {} for undefined).
func UnwrapKeys(v any) ([]any, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("sort values are an array, got %T", v)
	}
	out := make([]any, len(arr))
	for i, w := range arr {
		m, ok := w.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a sort value is wrapped in an object, got %T", w)
		}
		if x, ok := m["v"]; ok {
			out[i] = x
		} else {
			out[i] = query.Undefined
		}
	}
	return out, nil
}

// Keys returns the position's sort values (nil for none).
func (p *Pos) keys() ([]any, error) {
	if len(p.Keys) == 0 {
		return nil, nil
	}
	v, err := jsontext.DecodeShared(p.Keys)
	if err != nil {
		return nil, err
	}
	return UnwrapKeys(v)
}

// SortedAfter returns a function reporting whether a row (its sort
// values and its document's place, compared by cmpDoc) comes strictly
// after pos in a Sorted query's order: by sort values in their
// directions, then by document. A position whose values do not fit the
// query (another number of them, not decodable) is an error.
func SortedAfter(pos *Pos, desc []bool, cmpDoc func(string, string) int) (func(keys []any, doc string) bool, error) {
	keys, err := pos.keys()
	if err != nil || len(keys) != len(desc) {
		return nil, fmt.Errorf("the position's sort values do not fit the query's ORDER BY")
	}
	return func(k []any, doc string) bool {
		if c := query.CompareKeys(k, keys, desc); c != 0 {
			return c > 0
		}
		return cmpDoc(doc, pos.Doc) > 0
	}, nil
}

// Restart is the error for a page that cannot resume exactly: its
// token's results are gone (their cursor evicted, or the store
// restarted) and the query's shape (Whole: an aggregate, GROUP BY,
// DISTINCT, an ORDER BY over JOINed rows, ...) ties no row to a position
// in the collection, so a re-run would resume at an offset into results
// that may have shifted. A *store.Error of kind store.ErrBadRequest
// saying to run the query again from its first page.
func Restart(op, l string) error {
	return store.Errorf(store.ErrBadRequest, op, l, "", "continuation token: the results kept for it are gone (evicted by other queries, or the store restarted) and this query's results (an aggregate, GROUP BY, DISTINCT, or ORDER BY over rows that are not its documents) cannot be resumed exactly from a position in the collection: run the query again from its first page")
}
