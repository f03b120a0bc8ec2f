package routertest

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/docshard/docshard/query"
)

// TotalOrder reports whether a query's ORDER BY ends in the unique id, so
// its rows come in one order only.
func TotalOrder(q string) bool {
	_, order, ok := strings.Cut(q, "ORDER BY")
	if !ok {
		return false
	}
	order, _, _ = strings.Cut(order, "OFFSET")
	return strings.Contains(order, "c.id")
}

// DeterminedCorpus returns the Corpus's queries whose answer is fully
// determined as a multiset or, when ordered by the id, as a sequence: the
// ones that cut rows (TOP, OFFSET) without a total order are left out.
func DeterminedCorpus() []string {
	var out []string
	for _, q := range Corpus {
		if (strings.Contains(q, "TOP") || strings.Contains(q, "OFFSET")) && !TotalOrder(q) {
			continue
		}
		out = append(out, q)
	}
	return out
}

// SameAnswer compares two answers to the query text: rows as canonical
// JSON without the system properties _etag and _ts (a copy's differ from
// its source's), in order when the query orders them totally and as
// multisets otherwise, numbers within a relative 1e-9. It returns the rows
// it compared, for a message.
func SameAnswer(text string, want, got []json.RawMessage) (same bool, w, g []string, err error) {
	if w, err = canonicalRows(text, want); err != nil {
		return false, nil, nil, err
	}
	if g, err = canonicalRows(text, got); err != nil {
		return false, nil, nil, err
	}
	if len(w) != len(g) {
		return false, w, g, nil
	}
	for i := range w {
		var a, b any
		_ = json.Unmarshal([]byte(w[i]), &a)
		_ = json.Unmarshal([]byte(g[i]), &b)
		if !query.EqualValues(a, b, 1e-9) {
			return false, w, g, nil
		}
	}
	return true, w, g, nil
}

func canonicalRows(text string, rows []json.RawMessage) ([]string, error) {
	out := make([]string, len(rows))
	for i, r := range rows {
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			return nil, err
		}
		if m, ok := v.(map[string]any); ok {
			delete(m, "_etag")
			delete(m, "_ts")
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out[i] = string(b)
	}
	if !TotalOrder(text) {
		sort.Strings(out)
	}
	return out, nil
}
