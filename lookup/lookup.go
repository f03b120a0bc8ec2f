package lookup

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/docshard/docshard/internal/linkset"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/resolver"
)

// Kind is the "kind" of the lookup resolver's JSON form.
const Kind = "lookup"

// Resolver maps exact key values to targets. It is immutable and safe for
// concurrent use.
type Resolver struct {
	key     resolver.KeyDef
	entries map[string]resolver.Target // canonical key text → target
	names   []string                   // entry names, sorted
	def     resolver.Target
	all     []string // every link once: entries in name order, then the default
}

var (
	_ resolver.Resolver = (*Resolver)(nil)
	_ resolver.Kinded   = (*Resolver)(nil)
)

// New builds a lookup resolver. entries maps canonical key texts (see the
// package documentation: "bigcorp", "42", `["eu",42]`) to targets, taken
// verbatim; def, when not zero, takes every other value. key is the
// partitionKey path (zero for a lookup nested in another resolver, which is
// handed keys). It needs at least one entry or a default. Several entries
// may share a target.
//
// Every target must be a valid collection link or a resolver (not both);
// names must be valid UTF-8 (JSON cannot write anything else). Errors are
// *resolver.ConfigError naming the field as JSON does (`entries["eu"]`,
// "default"). It copies the map and costs O(n log n) for the sorted names.
func New(key resolver.KeyDef, entries map[string]resolver.Target, def resolver.Target) (*Resolver, error) {
	if len(entries) == 0 && def.IsZero() {
		return nil, resolver.Invalid("entries", nil, "a lookup needs at least one entry or a default")
	}
	r := &Resolver{key: key, entries: maps.Clone(entries), def: def}
	if r.entries == nil {
		r.entries = map[string]resolver.Target{}
	}
	r.names = slices.Sorted(maps.Keys(r.entries))
	for _, name := range r.names {
		if !utf8.ValidString(name) {
			return nil, resolver.Invalid(field(name), nil, "the value is not valid UTF-8 (a JSON object key cannot hold it)")
		}
		if err := checkTarget(field(name), r.entries[name], true); err != nil {
			return nil, err
		}
	}
	if err := checkTarget("default", def, false); err != nil {
		return nil, err
	}
	lists := make([][]string, 0, len(r.names)+1)
	for _, name := range r.names {
		lists = append(lists, r.entries[name].Links())
	}
	if !def.IsZero() {
		lists = append(lists, def.Links())
	}
	r.all = linkset.Union(lists...)
	return r, nil
}

// NewValues is New for entries keyed by Go values (strings, numbers of any
// type, json.Number), each turned into its canonical text by
// partitionkey.PlacementText: map[int]resolver.Target{7: ...} makes the
// entry "7".
// Two values with the same text (1 and 1.0, or 42 and "42" in a
// map[any]resolver.Target) are an error naming both, as is a value of
// another type.
func NewValues[K comparable](key resolver.KeyDef, entries map[K]resolver.Target, def resolver.Target) (*Resolver, error) {
	byText := make(map[string]resolver.Target, len(entries))
	from := make(map[string]K, len(entries))
	// Sorted by the values' text, so a collision is reported alike every run.
	values := slices.SortedFunc(maps.Keys(entries), func(a, b K) int {
		return strings.Compare(fmt.Sprintf("%T %v", a, a), fmt.Sprintf("%T %v", b, b))
	})
	for _, v := range values {
		text, err := partitionkey.PlacementText(v)
		if err != nil {
			return nil, &resolver.ConfigError{Field: fmt.Sprintf("entries[%v]", v), Value: fmt.Sprintf("%v (%T)", v, v), Reason: "a lookup value is a string, a number or a composite key", Err: err}
		}
		if prev, dup := from[text]; dup {
			return nil, resolver.Invalid(field(text), nil, fmt.Sprintf("the values %v (%T) and %v (%T) share this canonical text", prev, prev, v, v))
		}
		from[text] = v
		byText[text] = entries[v]
	}
	return New(key, byText, def)
}

// field names an entry in errors as JSON holds it: entries["eu"].
func field(name string) string { return fmt.Sprintf("entries[%q]", name) }

// checkTarget checks a target of a definition built in Go, as decoding
// checks one read from JSON: a valid link or a resolver, not both.
func checkTarget(field string, t resolver.Target, required bool) error {
	if t.IsZero() {
		if required {
			return resolver.Invalid(field, nil, "missing: want a collection link or a resolver")
		}
		return nil
	}
	if t.Resolver == nil {
		return resolver.InField(field, resolver.ValidateLink(t.Link))
	}
	if t.Link != "" {
		return resolver.Invalid(field, t.Link, "set a link or a resolver, not both")
	}
	return nil
}

// Kind returns "lookup".
func (r *Resolver) Kind() string { return Kind }

// PartitionKey extracts the key of doc at the resolver's partitionKey (see
// resolver.KeyDef.Extract). A document without it is an error wrapping
// resolver.ErrNoPartitionKey.
func (r *Resolver) PartitionKey(doc any) (any, error) { return r.key.Extract(doc) }

// Lookup returns the target that places key: its entry's, else the
// default. A value with neither is an error wrapping resolver.ErrNoTarget
// naming the value; a key of a type without canonical text wraps
// resolver.ErrKeyType. It costs one map access and allocates nothing.
func (r *Resolver) Lookup(key any) (resolver.Target, error) {
	var (
		t  resolver.Target
		ok bool
	)
	if s, isString := key.(string); isString {
		t, ok = r.entries[s]
	} else {
		var buf [64]byte
		text, err := partitionkey.AppendPlacement(buf[:0], key)
		if err != nil {
			return resolver.Target{}, err
		}
		t, ok = r.entries[string(text)] // no allocation: the compiler looks up the bytes
	}
	if ok {
		return t, nil
	}
	if !r.def.IsZero() {
		return r.def, nil
	}
	return resolver.Target{}, &resolver.KeyError{Key: key, Err: resolver.ErrNoTarget, Reason: "no entry for this value and no default"}
}

// ResolveForCreate returns the collection of key's entry, or the default's,
// asking a nested resolver when the target is one. Errors as Lookup, or the
// nested resolver's.
func (r *Resolver) ResolveForCreate(key any) (string, error) {
	t, err := r.Lookup(key)
	if err != nil {
		return "", err
	}
	return t.ResolveForCreate(key)
}

// ResolveForRead returns the collections that may hold key: its target's
// link, or a nested resolver's answer for the key. A nil key returns every
// link of every entry (in sorted name order) and then of the default, each
// once. Errors as Lookup.
func (r *Resolver) ResolveForRead(key any) ([]string, error) {
	if key == nil {
		return slices.Clone(r.all), nil
	}
	t, err := r.Lookup(key)
	if err != nil {
		return nil, err
	}
	return t.ResolveForRead(key)
}

// Entries returns a copy of the entries: canonical key text → target.
func (r *Resolver) Entries() map[string]resolver.Target { return maps.Clone(r.entries) }

// Names returns the entry names (canonical key texts), sorted.
func (r *Resolver) Names() []string { return slices.Clone(r.names) }

// Len returns the number of entries.
func (r *Resolver) Len() int { return len(r.names) }

// Default returns the default target (zero when there is none).
func (r *Resolver) Default() resolver.Target { return r.def }

// KeyDef returns the partitionKey setting (zero when there is none).
func (r *Resolver) KeyDef() resolver.KeyDef { return r.key }
