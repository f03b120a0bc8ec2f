package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/partitionkey"
)

// oracle extracts segs from a document decoded by encoding/json, by the
// rules Extract documents, independently of the package's walkers.
func oracle(doc any, segs []string) (any, error) {
	cur := doc
	for _, s := range segs {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, ErrNoPartitionKey
		}
		if cur, ok = obj[s]; !ok {
			return nil, ErrNoPartitionKey
		}
	}
	switch v := cur.(type) {
	case nil:
		return Null, nil
	case map[string]any, []any:
		return nil, ErrKeyType
	default:
		return v, nil
	}
}

// allPaths lists the path of every value in a decoded JSON object.
func allPaths(v any, prefix []string, out *[][]string) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, child := range obj {
		p := append(append([]string(nil), prefix...), k)
		*out = append(*out, p)
		allPaths(child, p, out)
	}
}

// checkParity extracts every path of doc's JSON (and the extra ones) from
// doc itself and from its JSON, and compares both with the oracle reading
// what encoding/json wrote.
func checkParity(t *testing.T, doc any, extra ...[]string) {
	t.Helper()
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	var decoded any
	require.NoError(t, json.Unmarshal(raw, &decoded))
	var paths [][]string
	allPaths(decoded, nil, &paths)
	paths = append(paths, extra...)
	for _, segs := range paths {
		if strings.ContainsFunc(strings.Join(segs, ""), func(r rune) bool { return r < 0x20 }) {
			continue // no path can name it
		}
		p, err := partitionkey.PathOf(segs...)
		require.NoError(t, err)
		path := p.String()
		d := MustKeyDef(path)
		want, wantErr := oracle(decoded, segs)
		got, err := d.Extract(doc)
		sameKey(t, want, wantErr, got, err, "%s of %T from the value; JSON %s", path, doc, raw)
		got, err = d.Extract(raw)
		sameKey(t, want, wantErr, got, err, "%s of %T from its JSON %s", path, doc, raw)
	}
}

type embA struct {
	Name string `json:"name"`
	A    string
}

type embB struct {
	Name string `json:"name"`
	B    string
}

type EmbPtr struct {
	Deep string `json:"deep"`
}

type embTagged struct {
	Name string `json:"Name"`
}

type embUntagged struct {
	Name string
}

type L1 struct{ embA }
type L2 struct{ embA }

type upper string

func (u upper) MarshalText() ([]byte, error) { return []byte(strings.ToUpper(string(u))), nil }

type ptrMarshal struct{ V string }

func (p *ptrMarshal) MarshalJSON() ([]byte, error) { return json.Marshal("ptr:" + p.V) }

type zeroInt int

func (z zeroInt) IsZero() bool { return z == 7 }

type textKey struct{ A, B string }

func (k textKey) MarshalText() ([]byte, error) { return []byte(k.A + "-" + k.B), nil }

type renamed struct {
	Secret string
	Shown  string
}

func (r renamed) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"shown": r.Shown, "nested": map[string]string{"x": r.Secret}})
}

type myString string

// twoNames is struct{ embA; embB; Own string } with values.
func twoNames() any {
	t := reflect.StructOf([]reflect.StructField{
		{Name: "EmbA", Type: reflect.TypeFor[embA](), Anonymous: true},
		{Name: "EmbB", Type: reflect.TypeFor[embB](), Anonymous: true},
		{Name: "Own", Type: reflect.TypeFor[string]()},
	})
	v := reflect.New(t).Elem()
	v.Field(0).Set(reflect.ValueOf(embA{"a", "A"}))
	v.Field(1).Set(reflect.ValueOf(embB{"b", "B"}))
	v.Field(2).SetString("own")
	return v.Interface()
}

// shadowDoc's own "name" hides embA's.
type shadowDoc struct {
	embA
	X string `json:"name"`
}

// TestStructMatchesEncodingJSON: documents built to hit encoding/json's
// corner cases give, from the Go value, exactly what their JSON gives.
func TestStructMatchesEncodingJSON(t *testing.T) {
	s := "s"
	n := 5
	raw := json.RawMessage(`{"k":"in raw","arr":[1,2],"n":-0.5}`)
	docs := []any{
		// Two embedded fields named "name" at one depth: dropped; A and B
		// promoted. (Built at run time: go vet rejects the type written out.)
		twoNames(),
		// A field at depth 0 hides the embedded one.
		shadowDoc{embA{"a", "A"}, "x"},
		// At one depth the tagged field wins.
		struct {
			embTagged
			embUntagged
		}{embTagged{"tagged"}, embUntagged{"untagged"}},
		// One struct type embedded twice at one depth: its fields vanish.
		struct {
			L1
			L2
			Keep string `json:"keep"`
		}{L1{embA{"1", "A1"}}, L2{embA{"2", "A2"}}, "k"},
		// Embedded pointers, nil and set; an embedded struct with a tag is
		// a field, not promoted.
		struct {
			*EmbPtr
			ID string `json:"id"`
		}{nil, "1"},
		struct {
			*EmbPtr
			Named embA `json:"named"`
		}{&EmbPtr{"deep!"}, embA{"n", "A"}},
		// omitempty and omitzero, empty and not.
		struct {
			K  string            `json:"k,omitempty"`
			N  int               `json:"n,omitempty"`
			P  *string           `json:"p,omitempty"`
			M  map[string]string `json:"m,omitempty"`
			T  time.Time         `json:"t,omitzero"`
			Z  zeroInt           `json:"z,omitzero"`
			Z2 zeroInt           `json:"z2,omitzero"`
			F  float64           `json:"f,omitzero"`
		}{Z: 7, Z2: 0},
		struct {
			K string  `json:"k,omitempty"`
			N int     `json:"n,omitempty"`
			P *string `json:"p,omitempty"`
		}{"k", 3, &s},
		// ",string" on numbers, bools, strings and pointers.
		struct {
			N  int      `json:"n,string"`
			F  float64  `json:"f,string"`
			B  bool     `json:"b,string"`
			S  string   `json:"s,string"`
			P  *int     `json:"p,string"`
			NP *int     `json:"np,string"`
			U  uint8    `json:"u,string"`
			Ms myString `json:"ms,string"`
		}{N: 12, F: 1e21, B: true, S: `<a "q">`, P: &n, U: 255, Ms: "m"},
		// Values with their own JSON form.
		struct {
			T     time.Time       `json:"t"`
			R     json.RawMessage `json:"r"`
			Bytes []byte          `json:"bytes"`
			Up    upper           `json:"up"`
			PM    ptrMarshal      `json:"pm"`
			Num   json.Number     `json:"num"`
			Obj   renamed         `json:"obj"`
		}{time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), raw, []byte("hello"), "shout", ptrMarshal{"v"}, "1.50", renamed{"secret", "shown"}},
		// Maps with every kind of key encoding/json writes.
		struct {
			Ints  map[int]string      `json:"ints"`
			Uints map[uint8]bool      `json:"uints"`
			Texts map[textKey]float64 `json:"texts"`
			Named map[myString]int    `json:"named"`
			Raws  map[string]any      `json:"raws"`
		}{
			map[int]string{-3: "minus", 7: "seven"},
			map[uint8]bool{200: true},
			map[textKey]float64{{"a", "b"}: 1.5},
			map[myString]int{"m": 4},
			map[string]any{"r": raw, "t": time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC), "s": &embA{"x", "y"}},
		},
		// Interfaces holding structs, pointers, maps and scalars.
		struct {
			A any `json:"a"`
			B any `json:"b"`
			C any `json:"c"`
			D any `json:"d"`
			E any `json:"e"`
		}{embA{"n", "A"}, &EmbPtr{"p"}, map[string]int{"k": 1}, int8(-4), float32(0.1)},
		// Top-level marshaler.
		renamed{"secret", "shown"},
		// Numbers of every Go type.
		struct {
			I8  int8    `json:"i8"`
			I64 int64   `json:"i64"`
			U64 uint64  `json:"u64"`
			F32 float32 `json:"f32"`
			F64 float64 `json:"f64"`
		}{-8, math.MaxInt64, math.MaxUint64, 3.4e38, -1e-7},
	}
	extra := [][]string{{"name"}, {"Name"}, {"A"}, {"B"}, {"deep"}, {"Secret"}, {"secret"}, {"V"}, {"nested", "x"}, {"texts", "a-b"}, {"ints", "07"}, {"ints", "-3"}, {"raws", "r", "k"}, {"raws", "s", "name"}, {"a", "A"}, {"b", "deep"}, {"c", "k"}, {"missing"}, {"obj", "nested", "x"}, {"r", "arr"}}
	for _, name := range []string{"k", "n", "p", "m", "t", "z", "z2", "f", "np", "keep", "id"} {
		extra = append(extra, []string{name})
	}
	ambiguous, err := json.Marshal(twoNames())
	require.NoError(t, err)
	require.JSONEq(t, `{"A":"A","B":"B","Own":"own"}`, string(ambiguous), "encoding/json drops the ambiguous name")
	for i, doc := range docs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkParity(t, doc, extra...)
		})
	}
	// A pointer document calls pointer methods, as json.Marshal(&doc) does.
	pm := struct {
		PM ptrMarshal `json:"pm"`
	}{ptrMarshal{"v"}}
	checkParity(t, &pm)
	v, err := MustKeyDef("/pm").Extract(&pm)
	require.NoError(t, err)
	assert.Equal(t, "ptr:v", v)
	_, err = MustKeyDef("/pm").Extract(pm)
	assert.ErrorIs(t, err, ErrKeyType, "a value is not addressable: encoding/json writes the struct")
}

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("boom") }

type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errors.New("no JSON for you") }

type panickyZero int

func (panickyZero) IsZero() bool { panic("zero boom") }

func TestStructErrors(t *testing.T) {
	doc := struct {
		P   panicky         `json:"p"`
		F   failing         `json:"f"`
		NaN float64         `json:"nan"`
		Inf float32         `json:"inf"`
		C   complex128      `json:"c"`
		Ch  chan int        `json:"ch"`
		Z   panickyZero     `json:"z,omitzero"`
		Arr [2]int          `json:"arr"`
		Sl  []string        `json:"sl"`
		St  struct{ A int } `json:"st"`
	}{NaN: math.NaN(), Inf: float32(math.Inf(1)), C: 1i, Ch: make(chan int), Z: 3, Sl: []string{"a"}}
	for path, msg := range map[string]string{
		"/p": "panicked", "/f": "no JSON for you", "/nan": "NaN", "/inf": "NaN and infinities",
		"/c": "no JSON form", "/ch": "no JSON form", "/arr": "object or array", "/sl": "object or array", "/st": "object or array",
	} {
		var key any
		var err error
		require.NotPanics(t, func() { key, err = MustKeyDef(path).Extract(doc) }, path)
		require.ErrorIs(t, err, ErrKeyType, "%s: %v", path, key)
		assert.Contains(t, err.Error(), msg, path)
		assert.Contains(t, err.Error(), path)
	}
	// An IsZero that panics keeps the field (encoding/json would panic).
	v, err := MustKeyDef("/z").Extract(doc)
	require.NoError(t, err)
	assert.Equal(t, 3.0, v)
	// Map NaN values, json.Number that is no number.
	_, err = MustKeyDef("/k").Extract(map[string]any{"k": math.Inf(-1)})
	assert.ErrorIs(t, err, ErrKeyType)
	_, err = MustKeyDef("/k").Extract(map[string]any{"k": json.Number("x")})
	assert.ErrorIs(t, err, ErrKeyType)
	v, err = MustKeyDef("/k").Extract(map[string]any{"k": json.Number("-2.50")})
	require.NoError(t, err)
	assert.Equal(t, -2.5, v)
}

// structGen draws random struct types (reflect.StructOf) and values, with
// colliding JSON names, tags, embedding and every kind of field.
type structGen struct{ rng *rand.Rand }

var genNames = []string{"k", "a", "b", "x y", "é", `q"`}

func (g structGen) typ(depth int) reflect.Type {
	var fields []reflect.StructField
	used := map[string]bool{}
	for i := 0; i < 1+g.rng.IntN(5); i++ {
		f := reflect.StructField{Name: fmt.Sprintf("F%d", i)}
		ft, basic := g.fieldType(depth)
		f.Type = ft
		if ft.Kind() == reflect.Struct && ft.NumMethod() == 0 && depth < 2 && g.rng.IntN(2) == 0 {
			f.Anonymous = true
			f.Name = fmt.Sprintf("E%d", i)
		}
		tag := ""
		switch r := g.rng.IntN(10); {
		case r < 3 && !f.Anonymous:
			// untagged: named after the Go field
		case r == 3:
			tag = "-"
		default:
			if !f.Anonymous || g.rng.IntN(3) == 0 {
				tag = genNames[g.rng.IntN(len(genNames))]
			}
			if g.rng.IntN(4) == 0 {
				tag += ",omitempty"
			}
			if basic && g.rng.IntN(5) == 0 {
				tag += ",string"
			}
			if g.rng.IntN(6) == 0 {
				tag += ",omitzero"
			}
		}
		if tag != "" {
			f.Tag = reflect.StructTag(`json:"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(tag) + `"`)
		}
		if used[f.Name] {
			continue
		}
		used[f.Name] = true
		fields = append(fields, f)
	}
	return reflect.StructOf(fields)
}

func (g structGen) fieldType(depth int) (reflect.Type, bool) {
	n := 11
	if depth >= 2 {
		n = 7
	}
	switch g.rng.IntN(n) {
	case 0:
		return reflect.TypeFor[string](), true
	case 1:
		return reflect.TypeFor[float64](), true
	case 2:
		return reflect.TypeFor[int64](), true
	case 3:
		return reflect.TypeFor[bool](), true
	case 4:
		return reflect.TypeFor[*string](), true
	case 5:
		return reflect.TypeFor[time.Time](), false
	case 6:
		return reflect.TypeFor[any](), false
	case 7:
		return reflect.TypeFor[map[string]any](), false
	case 8:
		return reflect.PointerTo(g.typ(depth + 1)), false
	default:
		return g.typ(depth + 1), false
	}
}

func (g structGen) fill(v reflect.Value, depth int) {
	if g.rng.IntN(5) == 0 {
		return // leave the zero value
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString([]string{"", "v", "x y", `q"\`, "é😀"}[g.rng.IntN(5)])
	case reflect.Float64:
		v.SetFloat([]float64{0, 1.5, -2, 1e21, 1e-7, 123456.789}[g.rng.IntN(6)])
	case reflect.Int64:
		v.SetInt(g.rng.Int64N(1<<40) - 1<<39)
	case reflect.Bool:
		v.SetBool(g.rng.IntN(2) == 0)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		g.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Interface:
		if g.rng.IntN(3) == 0 && depth < 3 {
			s := reflect.New(g.typ(2)).Elem()
			g.fill(s, depth+1)
			v.Set(s)
		} else if x := randomValue(g.rng, 1); x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.Map:
		m, _ := randomValue(g.rng, 0).(map[string]any)
		v.Set(reflect.ValueOf(m))
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(g.rng.Int64N(1<<32), g.rng.Int64N(1e9)).UTC()))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			g.fill(v.Field(i), depth+1)
		}
	}
}

// TestStructPropertyRandomTypes: random struct types and values; every path
// of their JSON, and names that are not there, agree between the value, its
// JSON and the oracle.
func TestStructPropertyRandomTypes(t *testing.T) {
	g := structGen{rand.New(rand.NewPCG(3, 4))}
	n := 1500
	if testing.Short() {
		n = 200
	}
	var extra [][]string
	for _, a := range append(genNames, "F0", "F1", "E0", "E1") {
		extra = append(extra, []string{a})
		for _, b := range genNames[:3] {
			extra = append(extra, []string{a, b})
		}
	}
	for i := 0; i < n; i++ {
		v := reflect.New(g.typ(0))
		g.fill(v.Elem(), 0)
		checkParity(t, v.Elem().Interface(), extra...)
		checkParity(t, v.Interface(), extra...)
	}
}

func TestStructFieldsCached(t *testing.T) {
	type cachedDoc struct {
		embA
		K string `json:"k"`
	}
	typ := reflect.TypeFor[cachedDoc]()
	first := infoOf(typ)
	assert.Same(t, first, infoOf(typ))
	names := make([]string, 0, len(first.fields))
	for n := range first.fields {
		names = append(names, n)
	}
	sort.Strings(names)
	assert.Equal(t, []string{"A", "k", "name"}, names)
	assert.Equal(t, []int{0, 1}, first.fields["A"].index)
	// Extracting from a struct costs the key's interface box only.
	doc := any(&cachedDoc{embA: embA{Name: "n"}, K: "k"})
	d := MustKeyDef("/name")
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _, _ = d.Extract(doc) }), 1.0)
}

// TestStructKeyHints: a struct whose key field is not found says why: a
// name that differs in case (no json tag), or the names the struct has.
func TestStructKeyHints(t *testing.T) {
	type noTags struct {
		ID     string
		UserID string
	}
	type other struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	kd := MustKeyDef("/userId")
	_, err := kd.Extract(noTags{ID: "1", UserID: "u"})
	require.ErrorIs(t, err, ErrNoPartitionKey)
	assert.ErrorContains(t, err, `has no field encoded as "userId", but one encoded as "UserID": JSON names are case-sensitive; tag the field `+"`json:\"userId\"`")
	_, err = kd.Extract(&other{ID: "1"})
	require.ErrorIs(t, err, ErrNoPartitionKey)
	assert.ErrorContains(t, err, `has no field encoded as "userId" (its JSON names: id, name)`)
}
