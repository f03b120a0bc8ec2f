package query

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/querygen"
)

// encodedValues is what Execute returned before results were written
// directly: each value of Values encoded by appendShaped (SELECT * returns
// stored text instead, which Execute alone knows).
func encodedValues(t testing.TB, prog *Program, docs []Doc) []string {
	t.Helper()
	vals, err := prog.Values(context.Background(), seqOf(docs))
	require.NoError(t, err)
	out := make([]string, len(vals))
	for i, v := range vals {
		b, err := appendShaped(nil, v, prog.p.shape)
		require.NoError(t, err)
		out[i] = string(b)
	}
	return out
}

func executed(t testing.TB, prog *Program, docs []Doc) []string {
	t.Helper()
	rows, err := prog.Execute(context.Background(), seqOf(docs))
	require.NoError(t, err)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r)
	}
	return out
}

// TestWrittenResultsEqualEncodedValues: results written straight to JSON
// are, byte for byte, the encoding of the values the same query evaluates
// to, for hand-picked constructors and for generated queries, whole and as
// the fan-out planner rewrites them for each collection.
func TestWrittenResultsEqualEncodedValues(t *testing.T) {
	docs := []Doc{}
	for _, js := range []string{
		`{"id":"1","n":3,"s":"tab\tquote\"<&>","o":{"z":1,"a":[{"y":2,"b":1}]},"tags":["t1",7]}`,
		`{"id":"2","n":-1.5,"s":"é\u2028","o":{}}`,
		`{"id":"3","s":null,"tags":[]}`,
		`{"id":"4","n":1e21,"o":{"x":0.5}}`,
		`{"id":"5","n":3,"s":"x"}`,
	} {
		d, err := NewDoc([]byte(js))
		require.NoError(t, err)
		docs = append(docs, d)
	}
	hand := []string{
		`SELECT c.id, c.missing, c.n FROM c`,
		`SELECT VALUE c.n FROM c`, // undefined rows are dropped
		`SELECT VALUE {"b": c.n, "a": [c.missing, {"z": c.s, "a": c.id}, c.o], "m": c.missing} FROM c`,
		`SELECT VALUE [c.missing, c.missing] FROM c`,
		`SELECT VALUE {} FROM c`,
		`SELECT {"q\"k": c.s, "é": 1} AS xy, [[c.n], {"b": {"d": 1, "c": 2}}] AS arr FROM c`,
		`SELECT VALUE c.n FROM c OFFSET 1 LIMIT 2`, // skipped rows count only when defined
		`SELECT c.id FROM c OFFSET 10 LIMIT 2`,
		`SELECT TOP 2 {"k": [{"v": c.n}], "p": {"id": c.id, "s": c.s}} FROM c ORDER BY c.n DESC`,
		`SELECT TOP 1 VALUE c.s FROM c ORDER BY c.id DESC`, // the heap keeps undefined-free rows
		`SELECT c.id FROM c ORDER BY c.id OFFSET 2 LIMIT 2`,
		`SELECT VALUE {"a": (SELECT VALUE t FROM t IN c.tags)} FROM c`,
		`SELECT c.o.a[0] AS first, c.o FROM c`,
	}
	for _, text := range hand {
		t.Run(text, func(t *testing.T) {
			prog, err := Prepare(text, nil)
			require.NoError(t, err)
			require.NotNil(t, prog.p.write, "the projection is written directly")
			assert.Equal(t, encodedValues(t, prog, docs), executed(t, prog, docs))
		})
	}

	rng := rand.New(rand.NewPCG(24, 11))
	n := 1500
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		docs := genDocs(rng, 10+rng.IntN(60))
		text := querygen.Text(rng)
		texts := []string{text}
		if plan, err := PlanFanOut(mustParse(t, text), nil); err == nil {
			texts = append(texts, plan.Query)
		}
		for _, text := range texts {
			if strings.HasPrefix(text, "SELECT *") || strings.Contains(text, "SELECT DISTINCT *") {
				continue // stored text, not an encoding
			}
			prog, err := Prepare(text, nil)
			require.NoError(t, err, text)
			require.Equal(t, encodedValues(t, prog, docs), executed(t, prog, docs), text)
		}
	}
}

// TestWrittenHeapRowsReuseMemory: a row pushed out of a TOP heap lends its
// memory to the row that takes its place, and no result is the worse for
// it: rows arriving in the worst order, of growing and shrinking length.
func TestWrittenHeapRowsReuseMemory(t *testing.T) {
	var docs []Doc
	for i := 0; i < 300; i++ {
		d, err := NewDoc([]byte(`{"id":"` + strings.Repeat("x", (i*37)%23) + `","n":` + string(rune('0'+i%10)) + `,"i":` + strconv.Itoa(i) + `}`))
		require.NoError(t, err)
		docs = append(docs, d)
	}
	for _, text := range []string{
		"SELECT TOP 7 c.id, c.i FROM c ORDER BY c.i DESC",
		"SELECT TOP 7 c.id, c.i FROM c ORDER BY c.n, c.id DESC",
		"SELECT c.id, c.i FROM c ORDER BY c.n DESC, c.i OFFSET 5 LIMIT 9",
	} {
		prog, err := Prepare(text, nil)
		require.NoError(t, err)
		assert.Equal(t, encodedValues(t, prog, docs), executed(t, prog, docs), text)
	}
}

// TestNumbersEncodeAsEncodingJSON: numbers are written exactly as
// encoding/json writes a float64, the integer fast path included (signed
// zero, the edges of exact integers, exponents, fractions).
func TestNumbersEncodeAsEncodingJSON(t *testing.T) {
	nums := []float64{0, math.Copysign(0, -1), 1, -1, 42, 1e15, 1e20, 1e21, -1e21, 1<<53 - 1, 1 << 53, -(1<<53 - 1), -(1 << 53),
		1<<53 + 2, 0.5, -2.25, 1e-6, 1e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, 9007199254740993}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 20000; i++ {
		switch i % 4 {
		case 0:
			nums = append(nums, float64(rng.Int64N(1<<60)-1<<59))
		case 1:
			nums = append(nums, float64(rng.IntN(2000)-1000))
		case 2:
			nums = append(nums, rng.NormFloat64()*math.Pow(10, float64(rng.IntN(40)-20)))
		default:
			nums = append(nums, math.Float64frombits(rng.Uint64()))
		}
	}
	for _, f := range nums {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want, err := json.Marshal(f)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendFloat(nil, f)), "%v (%016x)", f, math.Float64bits(f))
	}
}

// TestExecuteBuildsNoObjects: Execute really writes results instead of
// building them: 400 results of object and array constructors, in document
// order and through a TOP heap, cost under two allocations a result (the
// heap keeps each row's sort keys, one allocation; building the results
// would cost a map per object, and measured 11 to 14 a result).
func TestExecuteBuildsNoObjects(t *testing.T) {
	var docs []Doc
	for i := 0; i < 400; i++ {
		d, err := NewDoc([]byte(`{"id":"d` + strconv.Itoa(i) + `","n":` + strconv.Itoa((i*7919)%1000) + `}`))
		require.NoError(t, err)
		docs = append(docs, d)
	}
	for _, text := range []string{
		`SELECT VALUE {"k": [{"v": c.n}, {"v": c.id}], "p": {"id": c.id, "n": c.n}} FROM c`,
		`SELECT TOP 400 {"k": [{"v": c.n}, {"v": c.id}], "p": {"id": c.id, "n": c.n}} FROM c ORDER BY c.n DESC, c.id`,
	} {
		prog, err := Prepare(text, nil)
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(5, func() {
			rows, err := prog.Execute(context.Background(), seqOf(docs))
			if err != nil || len(rows) != len(docs) {
				t.Fatalf("%d rows, %v", len(rows), err)
			}
		})
		assert.Less(t, allocs, float64(2*len(docs)), "%s: %v allocations for %d results", text, allocs, len(docs))
	}
}
