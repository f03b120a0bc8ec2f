// Package rangeresolver is docshard's range resolver (kind "range"): each
// collection owns an inclusive range of key values, as the DocumentDB .NET
// SDK's RangePartitionResolver did. Keys are strings (compared byte by byte,
// which is code-point order for UTF-8, not a language's collation), numbers,
// or RFC 3339 times (compared as instants, so offsets do not matter). A
// create goes to the one range holding its key; ranges may not overlap;
// keys outside every range go to the default target, or are an error. A read
// takes a key or a whole Range ("every event of January") and returns every
// collection whose range meets it.
//
//	{"kind": "range", "partitionKey": "/eventTime", "keyType": "time",
//	 "ranges": [{"low": "2026-01-01T00:00:00Z", "high": "2026-01-31T23:59:59Z", "target": "dbs/app/colls/jan"}],
//	 "default": "dbs/app/colls/overflow"}
//
// A Resolver is immutable and safe for concurrent use; placing a key is a
// binary search over the ranges.
package rangeresolver

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/docshard/docshard/resolver"
)

// Kind is the "kind" of the range resolver's JSON form.
const Kind = "range"

// Key types.
const (
	KeyString = "string"
	KeyNumber = "number"
	KeyTime   = "time"
)

// Bound is the type of range bounds: strings, numbers or times.
type Bound interface {
	string | float64 | time.Time
}

// Range is an inclusive range of keys [Low, High].
type Range[T Bound] struct {
	Low  T
	High T
}

// Contains reports whether Low <= v <= High.
func (r Range[T]) Contains(v T) bool {
	return compare(any(r.Low), any(v)) <= 0 && compare(any(v), any(r.High)) <= 0
}

// Intersects reports whether the two ranges share a value.
func (r Range[T]) Intersects(o Range[T]) bool {
	return compare(any(r.Low), any(o.High)) <= 0 && compare(any(o.Low), any(r.High)) <= 0
}

// String writes the range as [low, high].
func (r Range[T]) String() string {
	return "[" + formatBound(any(r.Low)) + ", " + formatBound(any(r.High)) + "]"
}

// compare orders two bounds of the same type.
func compare(a, b any) int {
	switch x := a.(type) {
	case string:
		return strings.Compare(x, b.(string))
	case float64:
		y := b.(float64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case time.Time:
		return x.Compare(b.(time.Time))
	}
	panic(fmt.Sprintf("rangeresolver: bound of type %T", a))
}

func formatBound(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case float64:
		b, _ := resolver.AppendNumber(nil, x)
		return string(b)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// Entry is one range and where its keys go.
type Entry[T Bound] struct {
	Range  Range[T]
	Target resolver.Target
}

// entry is the type-erased form kept by the resolver.
type entry struct {
	low, high any
	target    resolver.Target
	index     int // position in the definition, for messages
}

// Resolver places keys by ranges.
type Resolver struct {
	key     resolver.KeyDef
	keyType string
	entries []entry // sorted by low
	order   []entry // in definition order, for JSON
	def     resolver.Target
	all     []string
}

var (
	_ resolver.Resolver = (*Resolver)(nil)
	_ resolver.Kinded   = (*Resolver)(nil)
)

// New builds a range resolver over ranges of T (string, float64 or
// time.Time); def, when not zero, takes keys outside every range. Ranges
// must not overlap and must have Low <= High. Errors are
// *resolver.ConfigError naming the range ("ranges[2]").
func New[T Bound](key resolver.KeyDef, ranges []Entry[T], def resolver.Target) (*Resolver, error) {
	var zero T
	kt := keyTypeOf(any(zero))
	es := make([]entry, len(ranges))
	for i, e := range ranges {
		es[i] = entry{low: any(e.Range.Low), high: any(e.Range.High), target: e.Target, index: i}
	}
	return build(key, kt, es, def)
}

func keyTypeOf(v any) string {
	switch v.(type) {
	case string:
		return KeyString
	case float64:
		return KeyNumber
	default:
		return KeyTime
	}
}

func build(key resolver.KeyDef, kt string, es []entry, def resolver.Target) (*Resolver, error) {
	if len(es) == 0 {
		return nil, resolver.Invalid("ranges", nil, "a range resolver needs at least one range")
	}
	for _, e := range es {
		field := fmt.Sprintf("ranges[%d]", e.index)
		if f, ok := e.low.(float64); ok && (math.IsNaN(f) || math.IsNaN(e.high.(float64))) {
			return nil, resolver.Invalid(field, nil, "NaN is not a bound")
		}
		if compare(e.low, e.high) > 0 {
			return nil, resolver.Invalid(field, nil, fmt.Sprintf("low %s is above high %s", formatBound(e.low), formatBound(e.high)))
		}
		if e.target.IsZero() {
			return nil, resolver.Invalid(field+".target", nil, "missing")
		}
	}
	r := &Resolver{key: key, keyType: kt, order: es, def: def}
	r.entries = append([]entry(nil), es...)
	sort.SliceStable(r.entries, func(i, j int) bool { return compare(r.entries[i].low, r.entries[j].low) < 0 })
	for i := 1; i < len(r.entries); i++ {
		a, b := r.entries[i-1], r.entries[i]
		if compare(b.low, a.high) <= 0 {
			return nil, resolver.Invalid(fmt.Sprintf("ranges[%d]", b.index), nil,
				fmt.Sprintf("range %s overlaps ranges[%d] %s", rangeText(b), a.index, rangeText(a)))
		}
	}
	lists := make([][]string, 0, len(es)+1)
	for _, e := range r.entries {
		lists = append(lists, e.target.Links())
	}
	if !def.IsZero() {
		lists = append(lists, def.Links())
	}
	r.all = resolver.UnionLinks(lists...)
	return r, nil
}

func rangeText(e entry) string { return "[" + formatBound(e.low) + ", " + formatBound(e.high) + "]" }

// Kind returns "range".
func (r *Resolver) Kind() string { return Kind }

// KeyType returns "string", "number" or "time".
func (r *Resolver) KeyType() string { return r.keyType }

// KeyDef returns the partitionKey setting.
func (r *Resolver) KeyDef() resolver.KeyDef { return r.key }

// Default returns the default target (zero when there is none).
func (r *Resolver) Default() resolver.Target { return r.def }

// PartitionKey extracts the key of doc at the resolver's partitionKey.
func (r *Resolver) PartitionKey(doc any) (any, error) { return r.key.Extract(doc) }

// bound converts a key to the resolver's bound type: a string for string
// keys; any number for number keys; a time.Time, or a string in RFC 3339,
// for time keys. Anything else wraps resolver.ErrKeyType.
func (r *Resolver) bound(key any) (any, error) {
	if key == nil {
		return nil, &resolver.KeyError{Err: resolver.ErrNoPartitionKey}
	}
	switch r.keyType {
	case KeyString:
		if s, ok := key.(string); ok {
			return s, nil
		}
	case KeyNumber:
		if f, ok, err := resolver.Number(key); ok {
			if err != nil {
				return nil, err
			}
			if math.IsNaN(f) {
				return nil, &resolver.KeyError{Key: key, Err: resolver.ErrKeyType, Reason: "NaN"}
			}
			return f, nil
		}
	case KeyTime:
		switch t := key.(type) {
		case time.Time:
			return t, nil
		case string:
			p, err := time.Parse(time.RFC3339Nano, t)
			if err != nil {
				return nil, &resolver.KeyError{Key: key, Err: resolver.ErrKeyType, Reason: "not an RFC 3339 time"}
			}
			return p, nil
		}
	}
	return nil, &resolver.KeyError{Key: key, Err: resolver.ErrKeyType, Reason: "this range resolver takes " + r.keyType + " keys"}
}

// find returns the entry holding v, or -1.
func (r *Resolver) find(v any) int {
	// First range whose high >= v; it holds v if its low <= v.
	i := sort.Search(len(r.entries), func(i int) bool { return compare(r.entries[i].high, v) >= 0 })
	if i < len(r.entries) && compare(r.entries[i].low, v) <= 0 {
		return i
	}
	return -1
}

// ResolveForCreate returns the collection of the range holding key, or of
// the default.
func (r *Resolver) ResolveForCreate(key any) (string, error) {
	v, err := r.bound(key)
	if err != nil {
		return "", err
	}
	if i := r.find(v); i >= 0 {
		return r.entries[i].target.ResolveForCreate(key)
	}
	if !r.def.IsZero() {
		return r.def.ResolveForCreate(key)
	}
	return "", &resolver.KeyError{Key: key, Err: resolver.ErrNoTarget, Reason: "outside every range and no default"}
}

// ResolveForRead returns the collections that may hold key. key may be a
// single value or a Range[string], Range[float64] or Range[time.Time]
// (matching the key type): every collection whose range meets it, and the
// default's when part of it lies outside every range. nil returns every
// link, each once, in range order then the default's.
func (r *Resolver) ResolveForRead(key any) ([]string, error) {
	if key == nil {
		return append([]string(nil), r.all...), nil
	}
	var lo, hi any
	switch q := key.(type) {
	case Range[string]:
		lo, hi = q.Low, q.High
	case Range[float64]:
		lo, hi = q.Low, q.High
	case Range[time.Time]:
		lo, hi = q.Low, q.High
	default:
		v, err := r.bound(key)
		if err != nil {
			return nil, err
		}
		if i := r.find(v); i >= 0 {
			return r.entries[i].target.ResolveForRead(key)
		}
		if !r.def.IsZero() {
			return r.def.ResolveForRead(key)
		}
		return nil, &resolver.KeyError{Key: key, Err: resolver.ErrNoTarget, Reason: "outside every range and no default"}
	}
	if keyTypeOf(lo) != r.keyType {
		return nil, &resolver.KeyError{Key: key, Err: resolver.ErrKeyType, Reason: "this range resolver takes " + r.keyType + " ranges"}
	}
	if compare(lo, hi) > 0 {
		return nil, &resolver.KeyError{Key: key, Err: resolver.ErrKeyType, Reason: "low is above high"}
	}
	var lists [][]string
	covered := true
	cursor := lo // the lowest value of the query not yet known to be covered
	for _, e := range r.entries {
		if compare(e.high, lo) < 0 || compare(e.low, hi) > 0 {
			continue
		}
		if compare(e.low, cursor) > 0 {
			covered = false // a gap before this range
		}
		lists = append(lists, e.target.Links())
		if compare(e.high, cursor) >= 0 {
			cursor = e.high
		}
	}
	if len(lists) == 0 || compare(cursor, hi) < 0 {
		covered = false
	}
	// Ranges are inclusive; the cursor check treats the value just above
	// a range's high as uncovered, which errs toward asking the default.
	if !covered && !r.def.IsZero() {
		lists = append(lists, r.def.Links())
	}
	return resolver.UnionLinks(lists...), nil
}

// rangeSpec is one range in JSON; bounds are typed by keyType.
type rangeSpec struct {
	Low    json.RawMessage `json:"low"`
	High   json.RawMessage `json:"high"`
	Target resolver.Target `json:"target"`
}

type spec struct {
	Kind         string           `json:"kind"`
	PartitionKey *resolver.KeyDef `json:"partitionKey,omitempty"`
	KeyType      string           `json:"keyType"`
	Ranges       []rangeSpec      `json:"ranges"`
	Default      *resolver.Target `json:"default,omitempty"`
}

func encodeBound(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case float64:
		b, err := resolver.AppendNumber(nil, x)
		return b, err
	case time.Time:
		return json.Marshal(x.Format(time.RFC3339Nano))
	}
	return json.Marshal(v)
}

// MarshalJSON writes the resolver with its ranges in definition order.
func (r *Resolver) MarshalJSON() ([]byte, error) {
	s := spec{Kind: Kind, KeyType: r.keyType, Ranges: make([]rangeSpec, len(r.order))}
	if !r.key.IsZero() {
		k := r.key
		s.PartitionKey = &k
	}
	if !r.def.IsZero() {
		d := r.def
		s.Default = &d
	}
	for i, e := range r.order {
		lo, err := encodeBound(e.low)
		if err != nil {
			return nil, err
		}
		hi, err := encodeBound(e.high)
		if err != nil {
			return nil, err
		}
		s.Ranges[i] = rangeSpec{Low: lo, High: hi, Target: e.target}
	}
	return json.Marshal(s)
}

func decodeBound(kt, field string, raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, resolver.Invalid(field, nil, "missing")
	}
	switch kt {
	case KeyString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, resolver.Invalid(field, string(raw), "want a JSON string for keyType string")
		}
		return s, nil
	case KeyNumber:
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, resolver.Invalid(field, string(raw), "want a JSON number for keyType number")
		}
		return f, nil
	default:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, resolver.Invalid(field, string(raw), "want an RFC 3339 time string for keyType time")
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, resolver.Invalid(field, s, "not an RFC 3339 time")
		}
		return t, nil
	}
}

func decode(data []byte) (resolver.Resolver, error) {
	var s struct {
		Kind         string            `json:"kind"`
		PartitionKey *resolver.KeyDef  `json:"partitionKey"`
		KeyType      string            `json:"keyType"`
		Ranges       []json.RawMessage `json:"ranges"`
		Default      json.RawMessage   `json:"default"`
	}
	if err := resolver.DecodeStrict(data, &s); err != nil {
		return nil, err
	}
	switch s.KeyType {
	case KeyString, KeyNumber, KeyTime:
	case "":
		return nil, resolver.Invalid("keyType", nil, `missing: want "string", "number" or "time"`)
	default:
		return nil, resolver.Invalid("keyType", s.KeyType, `want "string", "number" or "time"`)
	}
	es := make([]entry, len(s.Ranges))
	for i, raw := range s.Ranges {
		field := fmt.Sprintf("ranges[%d]", i)
		var rs struct {
			Low    json.RawMessage `json:"low"`
			High   json.RawMessage `json:"high"`
			Target json.RawMessage `json:"target"`
		}
		if err := resolver.DecodeStrict(raw, &rs); err != nil {
			return nil, resolver.InField(field, err)
		}
		target, err := resolver.DecodeTarget(field+".target", rs.Target)
		if err != nil {
			return nil, err
		}
		lo, err := decodeBound(s.KeyType, field+".low", rs.Low)
		if err != nil {
			return nil, err
		}
		hi, err := decodeBound(s.KeyType, field+".high", rs.High)
		if err != nil {
			return nil, err
		}
		es[i] = entry{low: lo, high: hi, target: target, index: i}
	}
	def, err := resolver.DecodeTarget("default", s.Default)
	if err != nil {
		return nil, err
	}
	var key resolver.KeyDef
	if s.PartitionKey != nil {
		key = *s.PartitionKey
	}
	return build(key, s.KeyType, es, def)
}

func init() { resolver.Register(Kind, decode) }
