package rangeresolver

import (
	"fmt"
	"slices"
	"time"

	"github.com/docshard/docshard/internal/linkset"
	"github.com/docshard/docshard/resolver"
)

// Kind is the "kind" of the range resolver's JSON form.
const Kind = "range"

// Key types: the "keyType" of the JSON form.
const (
	KeyString = "string" // Go strings, byte-wise order
	KeyNumber = "number" // any Go number type or json.Number, as float64
	KeyTime   = "time"   // time.Time or RFC 3339 strings, as instants
)

// Entry is one range of a definition and where its keys go: a collection
// link (resolver.LinkTarget) or a nested resolver (resolver.ResolverTarget).
type Entry[T Bound] struct {
	Range  Range[T]
	Target resolver.Target
}

// Resolver places keys by ranges. It is immutable and safe for concurrent
// use.
type Resolver struct {
	key resolver.KeyDef
	tab table
	def resolver.Target
	all []string // every link once: ranges in key order, then the default
}

var (
	_ resolver.Resolver = (*Resolver)(nil)
	_ resolver.Kinded   = (*Resolver)(nil)
)

// table is the typed part of a resolver: its ranges, sorted.
type table interface {
	keyType() string
	size() int
	// find returns the target of the range holding key, nil when no range
	// holds it; a key of the wrong type is an error wrapping ErrKeyType.
	find(key any) (*resolver.Target, error)
	// read returns the links of every range meeting q (a Range of some
	// Bound type) and whether the ranges cover all of q.
	read(q any) (lists [][]string, covered bool, err error)
	links() [][]string
	specs() ([]rangeSpec, error)
}

// typed is the table of one bound type.
type typed[T Bound] struct {
	o      *ops[T]
	defs   []Entry[T] // the definition, in its order, bounds normalised
	sorted []Entry[T] // by Low; ranges do not overlap, so also by High
}

// New builds a range resolver over ranges of T (string, float64 or
// time.Time; the keyType follows from T). def, when not zero, takes the
// keys outside every range. key is the partitionKey path (zero for a
// resolver nested in another, which is handed keys). It needs at least one
// range or a default.
//
// Ranges are checked and sorted, O(n log n): Low <= High, finite numbers,
// valid UTF-8 strings, times RFC 3339 can write, no two ranges overlapping,
// every target a valid link or a resolver. Errors are
// *resolver.ConfigError naming the range as in JSON ("ranges[2].high", or
// "ranges[3]" for a range overlapping "ranges[1]"). The ranges are copied.
func New[T Bound](key resolver.KeyDef, ranges []Entry[T], def resolver.Target) (*Resolver, error) {
	tab, err := newTyped(ranges)
	if err != nil {
		return nil, err
	}
	return build(key, tab, def)
}

func newTyped[T Bound](ranges []Entry[T]) (*typed[T], error) {
	t := &typed[T]{o: opsOf[T](), defs: make([]Entry[T], len(ranges))}
	for i, e := range ranges {
		field := fmt.Sprintf("ranges[%d]", i)
		var reason string
		if e.Range.Low, reason = t.o.check(e.Range.Low); reason != "" {
			return nil, resolver.Invalid(field+".low", t.o.format(e.Range.Low), reason)
		}
		if e.Range.High, reason = t.o.check(e.Range.High); reason != "" {
			return nil, resolver.Invalid(field+".high", t.o.format(e.Range.High), reason)
		}
		if e.Range.Empty() {
			return nil, resolver.Invalid(field, nil, fmt.Sprintf("low %s is above high %s", t.o.format(e.Range.Low), t.o.format(e.Range.High)))
		}
		if err := checkTarget(field+".target", e.Target, true); err != nil {
			return nil, err
		}
		t.defs[i] = e
	}
	// Sort definition indexes by Low, so an overlap names both ranges as
	// the definition numbers them.
	idx := make([]int, len(t.defs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return t.o.cmp(t.defs[a].Range.Low, t.defs[b].Range.Low) })
	t.sorted = make([]Entry[T], len(idx))
	for k, i := range idx {
		t.sorted[k] = t.defs[i]
		// Sorted by Low, any overlap shows between neighbours.
		if k > 0 && t.o.cmp(t.defs[i].Range.Low, t.sorted[k-1].Range.High) <= 0 {
			a, b := idx[k-1], i
			if a > b {
				a, b = b, a
			}
			return nil, resolver.Invalid(fmt.Sprintf("ranges[%d]", b), nil,
				fmt.Sprintf("range %s overlaps ranges[%d] %s", t.defs[b].Range, a, t.defs[a].Range))
		}
	}
	return t, nil
}

// checkTarget checks a target of a definition built in Go, as decoding
// checks one read from JSON: a valid link or a resolver, not both.
func checkTarget(field string, t resolver.Target, required bool) error {
	switch {
	case t.IsZero():
		if required {
			return resolver.Invalid(field, nil, "missing: want a collection link or a resolver")
		}
	case t.Resolver != nil && t.Link != "":
		return resolver.Invalid(field, t.Link, "set a link or a resolver, not both")
	case t.Resolver == nil:
		return resolver.InField(field, resolver.ValidateLink(t.Link))
	}
	return nil
}

func build(key resolver.KeyDef, tab table, def resolver.Target) (*Resolver, error) {
	if key.Composite() {
		return nil, resolver.Invalid("partitionKey", fmt.Sprint(key.Paths()), "a range resolver reads one path: a composite key has no order")
	}
	if err := checkTarget("default", def, false); err != nil {
		return nil, err
	}
	if tab.size() == 0 && def.IsZero() {
		return nil, resolver.Invalid("ranges", nil, "a range resolver needs at least one range or a default")
	}
	lists := tab.links()
	if !def.IsZero() {
		lists = append(lists, def.Links())
	}
	return &Resolver{key: key, tab: tab, def: def, all: linkset.Union(lists...)}, nil
}

func (t *typed[T]) keyType() string { return t.o.keyType }
func (t *typed[T]) size() int       { return len(t.sorted) }

func (t *typed[T]) links() [][]string {
	out := make([][]string, len(t.sorted))
	for i := range t.sorted {
		out[i] = t.sorted[i].Target.Links()
	}
	return out
}

func (t *typed[T]) keyErr(key any) error {
	return &resolver.KeyError{Key: key, Err: resolver.ErrKeyType, Reason: "a range resolver of keyType " + t.o.keyType + " takes " + t.wants()}
}

func (t *typed[T]) wants() string {
	switch t.o.keyType {
	case KeyString:
		return "strings"
	case KeyNumber:
		return "numbers"
	}
	return "time.Time or RFC 3339 strings"
}

func (t *typed[T]) find(key any) (*resolver.Target, error) {
	v, ok, err := t.o.key(key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, t.keyErr(key)
	}
	// The first range whose High >= v holds v if its Low <= v.
	cmp, s := t.o.cmp, t.sorted
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cmp(s[m].Range.High, v) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s) && cmp(s[lo].Range.Low, v) <= 0 {
		return &s[lo].Target, nil
	}
	return nil, nil
}

func (t *typed[T]) read(key any) ([][]string, bool, error) {
	q, ok := key.(Range[T])
	if !ok {
		return nil, false, &resolver.KeyError{Key: key, Err: resolver.ErrKeyType, Reason: fmt.Sprintf("a range resolver of keyType %s reads a Range[%T]", t.o.keyType, *new(T))}
	}
	cmp := t.o.cmp
	for _, b := range [2]T{q.Low, q.High} {
		if _, _, err := t.o.key(b); err != nil { // NaN
			return nil, false, err
		}
	}
	if q.Empty() {
		return nil, false, &resolver.KeyError{Key: key, Err: resolver.ErrKeyType, Reason: "an empty range: low is above high"}
	}
	s := t.sorted
	i, _ := slices.BinarySearchFunc(s, q.Low, func(e Entry[T], v T) int {
		if cmp(e.Range.High, v) < 0 {
			return -1
		}
		return 1
	})
	var lists [][]string
	covered := true
	var cursor T // the High of the last range met
	for k := i; k < len(s) && cmp(s[k].Range.Low, q.High) <= 0; k++ {
		e := s[k]
		if k == i {
			covered = cmp(e.Range.Low, q.Low) <= 0
		} else if cmp(e.Range.Low, cursor) > 0 && !t.o.adjacent(cursor, e.Range.Low) {
			covered = false
		}
		cursor = e.Range.High
		// A nested resolver is asked only for the part inside its range.
		clip := Range[T]{Low: maxOf(cmp, e.Range.Low, q.Low), High: minOf(cmp, e.Range.High, q.High)}
		lists = append(lists, readTarget(e.Target, clip))
	}
	if lists == nil || cmp(cursor, q.High) < 0 {
		covered = false
	}
	return lists, covered, nil
}

func maxOf[T Bound](cmp func(a, b T) int, a, b T) T {
	if cmp(a, b) >= 0 {
		return a
	}
	return b
}

func minOf[T Bound](cmp func(a, b T) int, a, b T) T {
	if cmp(a, b) <= 0 {
		return a
	}
	return b
}

// readTarget returns the links of t that may hold keys of the query q: the
// link, the nested resolver's answer for q, or, when the nested resolver
// cannot read a range (a hash ring, a lookup), all its links.
func readTarget(t resolver.Target, q any) []string {
	if t.Resolver == nil {
		return []string{t.Link}
	}
	if links, err := t.Resolver.ResolveForRead(q); err == nil {
		return links
	}
	return t.Links()
}

// Ranges returns the ranges of r in definition order, when r's key type is
// T (ok is false otherwise). Bounds are as r keeps them: times without a
// monotonic reading, in an offset RFC 3339 can write. It copies the slice.
func Ranges[T Bound](r *Resolver) (ranges []Entry[T], ok bool) {
	t, ok := r.tab.(*typed[T])
	if !ok {
		return nil, false
	}
	return slices.Clone(t.defs), true
}

// Kind returns "range".
func (r *Resolver) Kind() string { return Kind }

// KeyType returns "string", "number" or "time".
func (r *Resolver) KeyType() string { return r.tab.keyType() }

// KeyDef returns the partitionKey setting (zero when there is none).
func (r *Resolver) KeyDef() resolver.KeyDef { return r.key }

// Default returns the default target (zero when there is none).
func (r *Resolver) Default() resolver.Target { return r.def }

// Len returns the number of ranges.
func (r *Resolver) Len() int { return r.tab.size() }

// PartitionKey extracts the key of doc at the resolver's partitionKey (see
// resolver.KeyDef.Extract). A document without it is an error wrapping
// resolver.ErrNoPartitionKey.
func (r *Resolver) PartitionKey(doc any) (any, error) { return r.key.Extract(doc) }

// ResolveForCreate returns the collection of the range holding key (asking
// a nested resolver when the range's target is one), or the default's. A
// key outside every range with no default is an error wrapping
// resolver.ErrNoTarget that names the key; a key of the wrong type wraps
// resolver.ErrKeyType; nil wraps resolver.ErrNoPartitionKey. It costs a
// binary search (a time string also a parse) and allocates nothing.
func (r *Resolver) ResolveForCreate(key any) (string, error) {
	t, err := r.target(key)
	if err != nil {
		return "", err
	}
	return t.ResolveForCreate(key)
}

func (r *Resolver) target(key any) (*resolver.Target, error) {
	if key == nil {
		return nil, &resolver.KeyError{Err: resolver.ErrNoPartitionKey}
	}
	t, err := r.tab.find(key)
	if err != nil || t != nil {
		return t, err
	}
	if !r.def.IsZero() {
		return &r.def, nil
	}
	return nil, &resolver.KeyError{Key: key, Err: resolver.ErrNoTarget, Reason: "outside every range and no default"}
}

// ResolveForRead returns the collections that may hold key, each once.
//
//   - nil: every link, ranges in key order, then the default's.
//   - a single key: the target of the range holding it (a nested
//     resolver's answer for the key), or the default's; errors as
//     ResolveForCreate.
//   - a Range[string], Range[float64] or Range[time.Time] matching the key
//     type: the targets of every range meeting it, in key order, then the
//     default's when part of the query lies outside every range. A query
//     outside every range with no default gives an empty list. A Range of
//     another type, or an empty one (Low above High), is an error wrapping
//     resolver.ErrKeyType.
func (r *Resolver) ResolveForRead(key any) ([]string, error) {
	switch key.(type) {
	case nil:
		return slices.Clone(r.all), nil
	case Range[string], Range[float64], Range[time.Time]:
		lists, covered, err := r.tab.read(key)
		if err != nil {
			return nil, err
		}
		if !covered && !r.def.IsZero() {
			lists = append(lists, readTarget(r.def, key))
		}
		return linkset.Union(lists...), nil
	}
	t, err := r.target(key)
	if err != nil {
		return nil, err
	}
	return t.ResolveForRead(key)
}
