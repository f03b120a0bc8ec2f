package partitionkey

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/jsontext"
)

func TestPlacementText(t *testing.T) {
	cases := []struct {
		key  any
		want string
	}{
		{"alice", "alice"},
		{"", ""},
		{42, "42"},
		{int8(-3), "-3"},
		{uint64(1 << 60), "1152921504606847000"}, // shortest digits, as ECMAScript prints 2**60
		{float32(0.1), "0.1"},
		{json.Number("1.50"), "1.5"},
		{json.Number("1E2"), "100"},
		{1e21, "1e+21"},
		{CompositeKey{"eu", 7, true, nil, 1.5}, `["eu",7,true,null,1.5]`},
		{[]any{"a\"b", "é\n\u0001"}, `["a\"b","é\n\u0001"]`},
		{CompositeKey{Null, nil, false}, `[null,null,false]`},
		{CompositeKey{float32(1.1), uint8(200), json.Number("-0")}, `[1.1,200,0]`},
	}
	for _, tc := range cases {
		got, err := PlacementText(tc.key)
		require.NoError(t, err, "%#v", tc.key)
		assert.Equal(t, tc.want, got, "%#v", tc.key)
	}
	for _, bad := range []any{true, Null, None, struct{}{}, map[string]any{}, CompositeKey{}, CompositeKey{[]any{1}}, CompositeKey{None}, json.Number("x"), math.NaN()} {
		_, err := PlacementText(bad)
		require.Error(t, err, "%#v", bad)
		assert.ErrorIs(t, err, ErrKeyType, "%#v", bad)
	}
	_, err := PlacementText(nil)
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	buf := make([]byte, 0, 64)
	var key any = CompositeKey{"eu", 7.5}
	assert.Zero(t, testing.AllocsPerRun(100, func() { buf, _ = AppendPlacement(buf[:0], key) }))
}

func TestIdentityText(t *testing.T) {
	cases := []struct {
		key  any
		want string
	}{
		{"alice", `"alice"`},
		{"1", `"1"`},
		{1, "1"},
		{42.0, "42"},
		{int64(42), "42"},
		{json.Number("4.2e1"), "42"},
		{1e-7, "1e-7"},
		{math.Copysign(0, -1), "0"},
		{"<&>\u2028é\"\\\n", `"<&>` + "\u2028" + `é\"\\\n"`},
		{"\xff", "\"\uFFFD\""},
		{true, "true"},
		{false, "false"},
		{Null, "null"},
		{nil, "null"},
		{None, "undefined"},
	}
	for _, tc := range cases {
		got, err := IdentityText(tc.key)
		require.NoError(t, err, "%#v", tc.key)
		assert.Equal(t, tc.want, got, "%#v", tc.key)
		// A string's placement text is its identity text without quotes.
		if s, ok := tc.key.(string); ok && s != "\xff" {
			var back string
			require.NoError(t, json.Unmarshal([]byte(got), &back))
			place, _ := PlacementText(s)
			assert.Equal(t, place, back)
		}
	}
	assert.Equal(t, NoneText, None.String())
	for _, bad := range []any{CompositeKey{"a"}, []any{"a"}, struct{}{}, math.Inf(1), json.Number("x"), []byte("a")} {
		_, err := IdentityText(bad)
		assert.ErrorIs(t, err, ErrKeyType, "%#v", bad)
	}
}

func TestAppendNumber(t *testing.T) {
	got, err := AppendNumber([]byte("x"), 1e21)
	require.NoError(t, err)
	assert.Equal(t, "x1e+21", string(got))
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := AppendNumber(nil, f)
		assert.ErrorIs(t, err, ErrKeyType)
	}
	f, ok, err := Number(float32(0.1))
	assert.True(t, ok)
	assert.NoError(t, err)
	assert.Equal(t, 0.1, f)
	_, ok, err = Number(json.Number("0x1"))
	assert.True(t, ok)
	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, json.Number("0x1"), ke.Key)
	_, ok, _ = Number("1")
	assert.False(t, ok)
}

func TestCollectionKeyAndEqual(t *testing.T) {
	assert.Equal(t, "eu", CollectionKey(CompositeKey{"eu", 7}))
	assert.Equal(t, "eu", CollectionKey([]any{[]any{"eu"}, 7}))
	assert.Nil(t, CollectionKey(CompositeKey{}))
	assert.Equal(t, Null, CollectionKey(Null))
	assert.Equal(t, 7, CollectionKey(7))

	for _, tc := range []struct {
		a, b any
		eq   bool
	}{
		{42, 42.0, true}, {int64(42), json.Number("42"), true}, {"42", 42, false}, {"a", "a", true},
		{Null, nil, true}, {None, None, true}, {None, Null, false}, {None, "undefined", false},
		{CompositeKey{"eu", 7}, []any{"eu", 7.0}, true}, {CompositeKey{"eu", 7}, CompositeKey{"eu", 8}, false},
		{CompositeKey{"eu"}, "eu", false}, {CompositeKey{"eu"}, CompositeKey{"eu", 1}, false},
		{"\xff", "\uFFFD", true},
	} {
		eq, err := Equal(tc.a, tc.b)
		require.NoError(t, err, "%#v %#v", tc.a, tc.b)
		assert.Equal(t, tc.eq, eq, "%#v %#v", tc.a, tc.b)
	}
	_, err := Equal(struct{}{}, "a")
	assert.ErrorIs(t, err, ErrKeyType)
	_, err = Equal(CompositeKey{"a", math.NaN()}, CompositeKey{"a", 1})
	assert.ErrorIs(t, err, ErrKeyType)
	var a, b any = CompositeKey{"eu", 7.5}, []any{"eu", 7.5}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = Equal(a, b) }))
}

func TestRawValue(t *testing.T) {
	for _, tc := range []struct {
		text     string
		kind     ValueKind
		value    any
		identity string
	}{
		{` "a\u0062" `, ValueString, "ab", `"ab"`},
		{`"<é>"`, ValueString, "<é>", `"<é>"`},
		{`"\u003c"`, ValueString, "<", `"<"`},
		{"\"\xff\"", ValueString, "\uFFFD", "\"\uFFFD\""},
		{`1e-07`, ValueNumber, 1e-7, "1e-7"},
		{`-0`, ValueNumber, math.Copysign(0, -1), "0"},
		{`true`, ValueBool, true, "true"},
		{`null`, ValueNull, Null, "null"},
	} {
		v, err := RawValueOf([]byte(tc.text))
		require.NoError(t, err, tc.text)
		assert.Equal(t, tc.kind, v.Kind(), tc.text)
		got, err := v.Value()
		require.NoError(t, err, tc.text)
		assert.Equal(t, tc.value, got, tc.text)
		id, err := v.AppendIdentity(nil)
		require.NoError(t, err)
		assert.Equal(t, tc.identity, string(id), tc.text)
	}
	for _, bad := range []string{``, `{}`, `[1]`, `1 2`, `tru`, `"a`} {
		_, err := RawValueOf([]byte(bad))
		assert.ErrorIs(t, err, ErrKeyType, bad)
	}
	_, err := RawValue{}.Value()
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	_, err = RawValue{}.AppendIdentity(nil)
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	_, err = AppendRawPlacement(nil, nil)
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	for kind, want := range map[ValueKind]string{ValueString: "string", ValueNumber: "number", ValueBool: "bool", ValueNull: "null", 0: "invalid"} {
		assert.Equal(t, want, kind.String())
	}
	// rawValue converts jsontext's kinds by number.
	assert.Equal(t, []ValueKind{ValueString, ValueNumber, ValueBool, ValueNull},
		[]ValueKind{ValueKind(jsontext.String), ValueKind(jsontext.Number), ValueKind(jsontext.Bool), ValueKind(jsontext.Null)})
}

func TestErrors(t *testing.T) {
	err := &KeyError{Path: "/k", Key: "v", Reason: "why", Err: ErrKeyType}
	assert.Equal(t, `resolver: partition key has an unsupported type at path /k: key "v" (string): why`, err.Error())
	assert.ErrorIs(t, err, ErrKeyType)
	_, err2 := ParsePath("/a b")
	assert.Equal(t, `partition-key path "/a b": at byte 2: white space in a property name: quote the name, as in /"department name"`, err2.Error())
	assert.Equal(t, "null", fmt.Sprint(Null))
	b, err3 := json.Marshal(Null)
	require.NoError(t, err3)
	assert.Equal(t, "null", string(b))
}
