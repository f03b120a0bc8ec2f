package resolver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixed is a minimal kind for codec tests: every key goes to one link.
type fixed struct {
	Link   string `json:"link"`
	Weight int    `json:"weight,omitempty"`
}

func (f fixed) PartitionKey(any) (any, error)        { return nil, ErrNoPartitionKey }
func (f fixed) ResolveForCreate(any) (string, error) { return f.Link, nil }
func (f fixed) ResolveForRead(any) ([]string, error) { return []string{f.Link}, nil }
func (f fixed) MarshalJSON() ([]byte, error) {
	type plain fixed
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
	}{"codectest-fixed", plain(f)})
}

func init() {
	Register("codectest-fixed", func(data []byte) (Resolver, error) {
		var s struct {
			Kind   string `json:"kind"`
			Link   string `json:"link"`
			Weight int    `json:"weight"`
		}
		if err := DecodeStrict(data, &s); err != nil {
			return nil, err
		}
		if err := ValidateLink(s.Link); err != nil {
			return nil, InField("link", err)
		}
		if s.Weight < 0 {
			return nil, Invalid("weight", s.Weight, "must not be negative")
		}
		return fixed{Link: s.Link, Weight: s.Weight}, nil
	})
}

func TestRegistry(t *testing.T) {
	assert.Contains(t, Kinds(), "codectest-fixed")
	assert.Panics(t, func() { Register("codectest-fixed", func([]byte) (Resolver, error) { return nil, nil }) })
	assert.Panics(t, func() { Register("", func([]byte) (Resolver, error) { return nil, nil }) })
	assert.Panics(t, func() { Register("codectest-nil", nil) })
}

func TestUnmarshalAndMarshal(t *testing.T) {
	r, err := Unmarshal([]byte(` {"kind":"codectest-fixed","link":"dbs/a/colls/b","weight":2} `))
	require.NoError(t, err)
	assert.Equal(t, fixed{Link: "dbs/a/colls/b", Weight: 2}, r)
	data, err := Marshal(r)
	require.NoError(t, err)
	assert.Equal(t, `{"kind":"codectest-fixed","link":"dbs/a/colls/b","weight":2}`, string(data))

	_, err = Marshal(nil)
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = Marshal(noJSON{})
	assert.ErrorContains(t, err, "does not implement json.Marshaler")
}

// noJSON is a resolver without a JSON form.
type noJSON struct{}

func (noJSON) PartitionKey(any) (any, error)        { return nil, ErrNoPartitionKey }
func (noJSON) ResolveForCreate(any) (string, error) { return "dbs/a/colls/b", nil }
func (noJSON) ResolveForRead(any) ([]string, error) { return nil, nil }

func TestUnmarshalErrors(t *testing.T) {
	cases := []struct{ name, json, field, msg string }{
		{"malformed", `{"kind":`, "", "malformed JSON"},
		{"not object", `[1,2]`, "", "a resolver is a JSON object"},
		{"empty", ``, "", "malformed JSON"},
		{"missing kind", `{"link":"dbs/a/colls/b"}`, "kind", "missing"},
		{"kind not string", `{"kind":7}`, "kind", "want a string"},
		{"unknown kind", `{"kind":"nope"}`, "kind", "unknown kind"},
		{"unknown field", `{"kind":"codectest-fixed","link":"dbs/a/colls/b","colour":"red"}`, "colour", "unknown field"},
		{"wrong type", `{"kind":"codectest-fixed","link":"dbs/a/colls/b","weight":"heavy"}`, "weight", "want int"},
		{"trailing data", `{"kind":"codectest-fixed","link":"dbs/a/colls/b"} {}`, "", "after top-level value"},
		{"bad setting", `{"kind":"codectest-fixed","link":"dbs/a/colls/b","weight":-1}`, "weight", "must not be negative"},
		{"bad link", `{"kind":"codectest-fixed","link":"x"}`, "link", "collection link"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Unmarshal([]byte(tc.json))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			var ce *ConfigError
			require.True(t, errors.As(err, &ce), "%T", err)
			assert.Equal(t, tc.field, ce.Field, "%v", err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestTargetJSON(t *testing.T) {
	var link Target
	require.NoError(t, json.Unmarshal([]byte(`"dbs/a/colls/b"`), &link))
	assert.Equal(t, LinkTarget("dbs/a/colls/b"), link)
	l, err := link.ResolveForCreate("k")
	require.NoError(t, err)
	assert.Equal(t, "dbs/a/colls/b", l)
	assert.Equal(t, []string{"dbs/a/colls/b"}, link.Links())

	var nested Target
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"codectest-fixed","link":"dbs/a/colls/n"}`), &nested))
	require.NotNil(t, nested.Resolver)
	l, err = nested.ResolveForCreate("k")
	require.NoError(t, err)
	assert.Equal(t, "dbs/a/colls/n", l)
	out, err := json.Marshal(nested)
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"codectest-fixed","link":"dbs/a/colls/n"}`, string(out))
	out, err = json.Marshal(link)
	require.NoError(t, err)
	assert.Equal(t, `"dbs/a/colls/b"`, string(out))

	var bad Target
	assert.ErrorIs(t, json.Unmarshal([]byte(`7`), &bad), ErrInvalid)
	assert.ErrorIs(t, json.Unmarshal([]byte(`"users"`), &bad), ErrInvalid)
	var zero Target
	assert.True(t, zero.IsZero())
	_, err = zero.ResolveForCreate("k")
	assert.ErrorIs(t, err, ErrNoTarget)
}

func TestInField(t *testing.T) {
	assert.Nil(t, InField("x", nil))
	err := InField("default", InField("ranges[1]", Invalid("high", 3, "bad")))
	var ce *ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "default.ranges[1].high", ce.Field)
	err = InField("collections", Invalid("[2]", nil, "dup"))
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "collections[2]", ce.Field)
	plain := errors.New("boom")
	err = InField("link", plain)
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "link", ce.Field)
	assert.ErrorIs(t, err, plain)
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestErrorMessages(t *testing.T) {
	e := &KeyError{Path: "/tenant", Key: "apac", Err: ErrNoTarget, Reason: "no entry"}
	assert.Equal(t, `resolver: no collection for partition key at path /tenant: key "apac" (string): no entry`, e.Error())
	c := &ConfigError{Field: "virtualNodes", Value: 0, Reason: "want 1 to 4096"}
	assert.Equal(t, "resolver: invalid definition: virtualNodes = 0: want 1 to 4096", c.Error())
}

func TestDecodeStrict(t *testing.T) {
	type rng struct {
		Low  int `json:"low"`
		High int `json:"high"`
	}
	type shape struct {
		Kind   string                   `json:"kind"`
		Ranges []rng                    `json:"ranges"`
		Named  map[string]rng           `json:"named"`
		Fixed  [2]rng                   `json:"fixed"`
		Target *Target                  `json:"target"`
		Raw    json.RawMessage          `json:"raw"`
		Key    *KeyDef                  `json:"key"`
		Ptr    *rng                     `json:"ptr"`
		Any    any                      `json:"any"`
		Deep   map[string][]map[int]rng `json:"deep"`
	}
	var s shape
	good := `{"kind":"x","ranges":[{"low":1,"high":2}],"named":{"a":{"low":3}},"fixed":[{},{"high":4}],
		"target":"dbs/a/colls/b","raw":{"Anything":"goes"},"key":"/k","ptr":{"low":5},"any":{"Free":1},
		"deep":{"d":[{"7":{"low":6}}]}}`
	require.NoError(t, DecodeStrict([]byte(good), &s))
	assert.Equal(t, 3, s.Named["a"].Low)
	assert.Equal(t, 6, s.Deep["d"][0][7].Low)

	cases := []struct{ json, field, msg string }{
		{`{"Kind":"x"}`, "Kind", `did you mean "kind"`},
		{`{"ranges":[{"low":1},{"LOW":2}]}`, "ranges[1].LOW", `did you mean "low"`},
		{`{"named":{"a":{"High":1}}}`, "named.a.High", "case-sensitive"},
		{`{"fixed":[{},{"hi":1}]}`, "hi", "unknown field"},
		{`{"ptr":{"Low":1}}`, "ptr.Low", "case-sensitive"},
		{`{"deep":{"d":[{"1":{"low":1,"Low":2}}]}}`, "deep.d[0].1.Low", "case-sensitive"},
		{`{"kind":"x"} }`, "", "after top-level value"},
		{`{"kind":"x"} {"kind":"y"}`, "", "after top-level value"},
		{`{"kind":"x"`, "", "malformed JSON"},
		{`{"ranges":{"low":1}}`, "ranges", "want []resolver.rng"},
		{`{"target":7}`, "", "a target is a collection link"},
		{`{"key":"nope"}`, "partitionKey", "want '/'"},
	}
	for _, tc := range cases {
		var s shape
		err := DecodeStrict([]byte(tc.json), &s)
		require.Error(t, err, tc.json)
		assert.ErrorIs(t, err, ErrInvalid, tc.json)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%s: %T %v", tc.json, err, err)
		assert.Equal(t, tc.field, ce.Field, "%s: %v", tc.json, err)
		assert.Contains(t, err.Error(), tc.msg, tc.json)
	}
	// Through Unmarshal: a member named but for case is rejected, naming
	// the field it resembles.
	_, err := Unmarshal([]byte(`{"kind":"codectest-fixed","Link":"dbs/a/colls/b"}`))
	var ce *ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "Link", ce.Field)
	assert.Contains(t, err.Error(), `did you mean "link"`)
	_, err = Unmarshal([]byte(`{"KIND":"codectest-fixed","link":"dbs/a/colls/b"}`))
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "kind", ce.Field, "the kind is looked up by its exact name")
}

func TestDecodeTarget(t *testing.T) {
	for _, raw := range []string{``, `null`, ` null `} {
		tg, err := DecodeTarget("default", json.RawMessage(raw))
		require.NoError(t, err)
		assert.True(t, tg.IsZero())
		links, err := tg.ResolveForRead(nil)
		require.NoError(t, err)
		assert.Nil(t, links)
	}
	_, err := DecodeTarget("default", json.RawMessage(`{"kind":"codectest-fixed","link":"x"}`))
	var ce *ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "default.link", ce.Field)
	_, err = DecodeTarget("entries.eu", json.RawMessage(`"users"`))
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "entries.eu", ce.Field)
	tg, err := DecodeTarget("default", json.RawMessage(`{"kind":"codectest-fixed","link":"dbs/a/colls/n"}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/a/colls/n"}, tg.Links())
	assert.Equal(t, []string{"dbs/a/colls/b"}, ResolverTarget(fixed{Link: "dbs/a/colls/b"}).Links())
}

// badJSON is a resolver whose MarshalJSON writes broken JSON.
type badJSON struct{ noJSON }

func (badJSON) MarshalJSON() ([]byte, error) { return []byte(`{"kind":`), nil }

func TestMarshalRejectsBrokenJSON(t *testing.T) {
	_, err := Marshal(badJSON{})
	assert.ErrorContains(t, err, "produced invalid JSON")
}

func TestNesting(t *testing.T) {
	for _, tc := range []struct {
		json string
		want int
	}{
		{`{}`, 1},
		{`{"a":[1,{"b":[]}]}`, 4},
		{`{"a":"[[[{{{"}`, 1},
		{`{"a":"\"[[","b":["\\",{}]}`, 3},
		{`[[[`, 3},
		{`"unterminated [`, 0},
	} {
		assert.Equal(t, tc.want, nesting([]byte(tc.json)), tc.json)
	}
	deep := `{"kind":"codectest-fixed","link":"dbs/a/colls/b","x":` + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + `}`
	_, err := Unmarshal([]byte(deep))
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "65 levels deep; at most 64")
}

// TestUnknownKindTeaches: a kind of docshard's own that is not registered
// names the package to import; with none registered the error says so.
func TestUnknownKindTeaches(t *testing.T) {
	_, err := Unmarshal([]byte(`{"kind":"hash","collections":["dbs/a/colls/c"]}`))
	require.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, `kind "hash" is registered by github.com/docshard/docshard/hashring: import it, or github.com/docshard/docshard, which registers every kind`)
	_, err = Unmarshal([]byte(`{"kind":"nosuch"}`))
	require.ErrorIs(t, err, ErrInvalid)
	if len(Kinds()) == 0 {
		assert.ErrorContains(t, err, "no kinds are registered: import github.com/docshard/docshard")
	} else {
		assert.ErrorContains(t, err, "known kinds: ")
	}
}
