package query

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The external conformance set (testdata/cosmos-sql): cases taken from
// Microsoft's own Cosmos DB SDK repositories (SOURCES.md names each one),
// written by nobody on this project. TestCosmosSQL runs every case that is
// not marked skip and reports, per category, how many agree, disagree and
// are skipped. A case that disagrees must be listed with its reason in
// testdata/cosmos-sql/disagreements.json; a listed case that agrees fails
// the test too, so the list stays exactly the set of disagreements.

// sqlCase is one line of cases.jsonl.
type sqlCase struct {
	ID        string            `json:"id"`
	Source    string            `json:"source"`
	Category  string            `json:"category"`
	Mode      string            `json:"mode"`
	Query     string            `json:"query"`
	Other     string            `json:"other"`
	Params    map[string]any    `json:"params"`
	Docset    string            `json:"docset"`
	Docs      []json.RawMessage `json:"docs"`
	Want      json.RawMessage   `json:"want"`
	WantTies  [][]any           `json:"want_ties"`
	WantCount *int              `json:"want_count"`
	Order     string            `json:"order"`
	Fanout    *bool             `json:"fanout"`
	Skip      string            `json:"skip"`
	Note      string            `json:"note"`
}

// sqlTally counts one category's outcomes.
type sqlTally struct{ agree, disagree, skipped int }

func TestCosmosSQL(t *testing.T) {
	cases := loadSQLCases(t)
	docsets := loadDocsets(t)
	known := loadDisagreements(t)

	tally := map[string]*sqlTally{}
	var unexpected, fixed []string
	seen := map[string]bool{}
	for _, c := range cases {
		require.False(t, seen[c.ID], "case id %s appears twice", c.ID)
		seen[c.ID] = true
		tl := tally[c.Category]
		if tl == nil {
			tl = &sqlTally{}
			tally[c.Category] = tl
		}
		if c.Skip != "" {
			tl.skipped++
			require.NotContains(t, known, c.ID, "%s is skipped; it cannot be listed as a disagreement", c.ID)
			continue
		}
		docs, err := caseDocs(c, docsets)
		require.NoError(t, err, c.ID)
		why := runSQLCase(c, docs)
		reason, listed := known[c.ID]
		switch {
		case why == "" && listed:
			fixed = append(fixed, c.ID)
			tl.agree++
		case why == "":
			tl.agree++
		case listed:
			tl.disagree++
			t.Logf("%s disagrees (listed: %s): %s", c.ID, reason, why)
		default:
			tl.disagree++
			unexpected = append(unexpected, fmt.Sprintf("%s [%s]: %s\n    query: %s", c.ID, c.Category, why, oneLine(c.Query)))
		}
	}
	for id := range known {
		require.True(t, seen[id], "disagreements.json lists %s, which is not a case", id)
	}

	var total sqlTally
	var report strings.Builder
	fmt.Fprintf(&report, "%-24s %6s %9s %8s\n", "category", "agree", "disagree", "skipped")
	cats := make([]string, 0, len(tally))
	for c := range tally {
		cats = append(cats, c)
	}
	slices.Sort(cats)
	for _, c := range cats {
		tl := tally[c]
		fmt.Fprintf(&report, "%-24s %6d %9d %8d\n", c, tl.agree, tl.disagree, tl.skipped)
		total.agree += tl.agree
		total.disagree += tl.disagree
		total.skipped += tl.skipped
	}
	fmt.Fprintf(&report, "%-24s %6d %9d %8d", "total", total.agree, total.disagree, total.skipped)
	t.Logf("Cosmos DB conformance (%d cases, %d counted):\n%s", len(cases), total.agree+total.disagree, report.String())

	if len(unexpected) > 0 {
		t.Errorf("%d cases disagree and are not listed in testdata/cosmos-sql/disagreements.json:\n  %s",
			len(unexpected), strings.Join(unexpected, "\n  "))
	}
	if len(fixed) > 0 {
		t.Errorf("these cases are listed in testdata/cosmos-sql/disagreements.json but agree now; remove them: %s",
			strings.Join(fixed, ", "))
	}
}

func loadSQLCases(t *testing.T) []sqlCase {
	t.Helper()
	f, err := os.Open("testdata/cosmos-sql/cases.jsonl")
	require.NoError(t, err)
	defer f.Close()
	var out []sqlCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		var c sqlCase
		require.NoError(t, dec.Decode(&c), "cases.jsonl line %d", line)
		if c.Mode == "" {
			c.Mode = "result"
		}
		out = append(out, c)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out)
	return out
}

func loadDocsets(t *testing.T) map[string][]json.RawMessage {
	t.Helper()
	data, err := os.ReadFile("testdata/cosmos-sql/docsets.json")
	require.NoError(t, err)
	var sets map[string][]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &sets))
	return sets
}

// loadDisagreements reads the counted cases docshard answers otherwise
// than the source, each with its reason.
func loadDisagreements(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("testdata/cosmos-sql/disagreements.json")
	require.NoError(t, err)
	var list struct {
		Cases []struct {
			ID     string `json:"id"`
			Reason string `json:"reason"`
		} `json:"cases"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&list))
	out := map[string]string{}
	for _, c := range list.Cases {
		require.NotEmpty(t, c.Reason, "disagreements.json: %s has no reason", c.ID)
		require.NotContains(t, out, c.ID, "disagreements.json lists %s twice", c.ID)
		out[c.ID] = c.Reason
	}
	return out
}

func caseDocs(c sqlCase, sets map[string][]json.RawMessage) ([]Doc, error) {
	raws := c.Docs
	if c.Docset != "" {
		set, ok := sets[c.Docset]
		if !ok {
			return nil, fmt.Errorf("unknown docset %q", c.Docset)
		}
		raws = set
	}
	docs := make([]Doc, 0, len(raws))
	for _, r := range raws {
		d, err := NewDoc(r)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// runSQLCase checks one case; it returns why docshard disagrees, or "".
func runSQLCase(c sqlCase, docs []Doc) (why string) {
	defer func() {
		if r := recover(); r != nil {
			why = fmt.Sprintf("panic: %v", r)
		}
	}()
	switch c.Mode {
	case "parse_ok":
		if _, err := Parse(c.Query); err != nil {
			return fmt.Sprintf("Parse refuses it: %v", err)
		}
	case "parse_error":
		if _, err := Parse(c.Query); err == nil {
			return "Parse accepts it; the SDK's parser refuses it"
		}
	case "accept":
		if _, err := Prepare(c.Query, c.Params); err != nil {
			return fmt.Sprintf("Prepare refuses it: %v", err)
		}
	case "reject":
		if _, err := Prepare(c.Query, c.Params); err == nil {
			return "Prepare accepts it; Cosmos DB refuses it"
		}
	case "same_as":
		a, err := runValues(c.Query, c.Params, nil)
		if err != nil {
			return fmt.Sprintf("query: %v", err)
		}
		b, err := runValues(c.Other, c.Params, nil)
		if err != nil {
			return fmt.Sprintf("parenthesized form: %v", err)
		}
		if !EqualValues(a, b, 0) {
			return fmt.Sprintf("gives %s; the parenthesized form gives %s", jsonText(a), jsonText(b))
		}
	case "result":
		got, err := runValues(c.Query, c.Params, docs)
		if err != nil {
			return err.Error()
		}
		if why := c.check(got); why != "" {
			return why
		}
		if c.Fanout != nil && !*c.Fanout {
			return ""
		}
		merged, err := runFanOut(c.Query, c.Params, docs, 3)
		if errors.Is(err, ErrUnmergeable) {
			return "" // checked on one collection only
		}
		if err != nil {
			return fmt.Sprintf("fanned out: %v", err)
		}
		if why := c.check(merged); why != "" {
			return "fanned out over 3 collections: " + why
		}
	default:
		return fmt.Sprintf("unknown mode %q", c.Mode)
	}
	return ""
}

// runValues runs a query over docs on one collection.
func runValues(text string, params map[string]any, docs []Doc) ([]any, error) {
	prog, err := Prepare(text, params)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := prog.Values(ctx, seqOf(docs))
	if out == nil {
		out = []any{}
	}
	return out, err
}

// runFanOut deals docs round-robin to n collections, runs the plan's query
// on each and merges the results as the router does.
func runFanOut(text string, params map[string]any, docs []Doc, n int) ([]any, error) {
	q, err := Parse(text)
	if err != nil {
		return nil, err
	}
	plan, err := PlanFanOut(q, params)
	if err != nil {
		return nil, err
	}
	parts := make([][]Doc, n)
	for i, d := range docs {
		parts[i%n] = append(parts[i%n], d)
	}
	results := make([][]any, n)
	for i := range parts {
		if results[i], err = runValues(plan.Query, params, parts[i]); err != nil {
			return nil, fmt.Errorf("collection %d runs %s: %w", i, plan.Query, err)
		}
	}
	return referenceMergeAll(plan, results)
}

// check compares results with what the case wants.
func (c sqlCase) check(got []any) string {
	const tol = 1e-9
	switch {
	case c.WantCount != nil:
		if len(got) != *c.WantCount {
			return fmt.Sprintf("want %d results, got %d", *c.WantCount, len(got))
		}
		return ""
	case c.WantTies != nil:
		i := 0
		for g, group := range c.WantTies {
			if i+len(group) > len(got) {
				return fmt.Sprintf("want %d results in %d groups, got %d: %s", countTies(c.WantTies), len(c.WantTies), len(got), jsonText(got))
			}
			if !sameMultiset(group, got[i:i+len(group)], tol) {
				return fmt.Sprintf("group %d: want %s (any order), got %s", g, jsonText(group), jsonText(got[i:i+len(group)]))
			}
			i += len(group)
		}
		if i != len(got) {
			return fmt.Sprintf("want %d results, got %d", i, len(got))
		}
		return ""
	}
	var want []any
	if err := json.Unmarshal(c.Want, &want); err != nil {
		return fmt.Sprintf("the case's want is not a JSON array: %v", err)
	}
	if want == nil {
		want = []any{}
	}
	if c.Order == "exact" {
		if !EqualValues(want, got, tol) {
			return fmt.Sprintf("want %s (in order), got %s", jsonText(want), jsonText(got))
		}
		return ""
	}
	if !sameMultiset(want, got, tol) {
		return fmt.Sprintf("want %s (any order), got %s", jsonText(want), jsonText(got))
	}
	return ""
}

func countTies(groups [][]any) int {
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	return n
}

// sameMultiset reports whether a and b hold the same values, in any order.
func sameMultiset(a, b []any, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
outer:
	for _, x := range a {
		for j, y := range b {
			if !used[j] && EqualValues(x, y, tol) {
				used[j] = true
				continue outer
			}
		}
		return false
	}
	return true
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
