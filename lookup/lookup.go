// Package lookup is docshard's lookup resolver (kind "lookup"): exact key
// values mapped to targets, with an optional default. It is the
// single-value case of range partitioning, for keys with few, known values:
// regions, tenants, applications. A target is a collection link or a nested
// resolver, so a lookup can give its large tenants collections of their own
// and send every other tenant to a hash ring:
//
//	{"kind": "lookup", "partitionKey": "/tenant",
//	 "entries": {"bigcorp": "dbs/app/colls/bigcorp"},
//	 "default": {"kind": "hash", "collections": ["dbs/app/colls/shared0", "dbs/app/colls/shared1"]}}
//
// Entries are keyed by the canonical text of the key (resolver.KeyString):
// a string as itself, a number in its RFC 8785 form ("42", "1.5"), a
// composite key as its canonical JSON array. So the number 42 and the
// string "42" share an entry. A Resolver is immutable and safe for
// concurrent use; a lookup costs one map access (plus formatting the text of
// a non-string key).
package lookup

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/docshard/docshard/resolver"
)

// Kind is the "kind" of the lookup resolver's JSON form.
const Kind = "lookup"

// Resolver maps exact key values to targets.
type Resolver struct {
	key     resolver.KeyDef
	entries map[string]resolver.Target
	values  []string // entry keys, sorted: the stable order of ResolveForRead(nil)
	def     resolver.Target
	all     []string // every link, each once
}

var (
	_ resolver.Resolver = (*Resolver)(nil)
	_ resolver.Kinded   = (*Resolver)(nil)
)

// New builds a lookup resolver. entries maps canonical key texts to
// targets; def, when not zero, takes every other value. At least one entry
// or a default is required; several values may share a collection. Errors
// are *resolver.ConfigError.
func New(key resolver.KeyDef, entries map[string]resolver.Target, def resolver.Target) (*Resolver, error) {
	if len(entries) == 0 && def.IsZero() {
		return nil, resolver.Invalid("entries", nil, "a lookup needs at least one entry or a default")
	}
	r := &Resolver{key: key, entries: make(map[string]resolver.Target, len(entries)), def: def}
	for v, t := range entries {
		if t.IsZero() {
			return nil, resolver.Invalid(fmt.Sprintf("entries[%q]", v), nil, "empty target")
		}
		r.entries[v] = t
		r.values = append(r.values, v)
	}
	sort.Strings(r.values)
	lists := make([][]string, 0, len(r.values)+1)
	for _, v := range r.values {
		lists = append(lists, r.entries[v].Links())
	}
	if !def.IsZero() {
		lists = append(lists, def.Links())
	}
	r.all = resolver.UnionLinks(lists...)
	return r, nil
}

// Kind returns "lookup".
func (r *Resolver) Kind() string { return Kind }

// PartitionKey extracts the key of doc at the resolver's partitionKey.
func (r *Resolver) PartitionKey(doc any) (any, error) { return r.key.Extract(doc) }

// target returns the target for key, or an error wrapping
// resolver.ErrNoTarget that names the value.
func (r *Resolver) target(key any) (resolver.Target, error) {
	text, err := resolver.KeyString(key)
	if err != nil {
		return resolver.Target{}, err
	}
	if t, ok := r.entries[text]; ok {
		return t, nil
	}
	if !r.def.IsZero() {
		return r.def, nil
	}
	return resolver.Target{}, &resolver.KeyError{Key: key, Err: resolver.ErrNoTarget, Reason: "no entry for this value and no default"}
}

// ResolveForCreate returns the collection of key's entry (or of the
// default), asking a nested resolver when the target is one.
func (r *Resolver) ResolveForCreate(key any) (string, error) {
	t, err := r.target(key)
	if err != nil {
		return "", err
	}
	return t.ResolveForCreate(key)
}

// ResolveForRead returns the collections that may hold key; nil returns
// every link of every entry (in sorted value order) and then the default's,
// each once.
func (r *Resolver) ResolveForRead(key any) ([]string, error) {
	if key == nil {
		return append([]string(nil), r.all...), nil
	}
	t, err := r.target(key)
	if err != nil {
		return nil, err
	}
	return t.ResolveForRead(key)
}

// Entries returns a copy of the value → target map.
func (r *Resolver) Entries() map[string]resolver.Target {
	out := make(map[string]resolver.Target, len(r.entries))
	for k, v := range r.entries {
		out[k] = v
	}
	return out
}

// Default returns the default target (zero when there is none).
func (r *Resolver) Default() resolver.Target { return r.def }

// KeyDef returns the partitionKey setting.
func (r *Resolver) KeyDef() resolver.KeyDef { return r.key }

type spec struct {
	Kind         string                     `json:"kind"`
	PartitionKey *resolver.KeyDef           `json:"partitionKey,omitempty"`
	Entries      map[string]resolver.Target `json:"entries"`
	Default      *resolver.Target           `json:"default,omitempty"`
}

// MarshalJSON writes the resolver; entries come out sorted by value.
func (r *Resolver) MarshalJSON() ([]byte, error) {
	s := spec{Kind: Kind, Entries: r.entries}
	if !r.key.IsZero() {
		k := r.key
		s.PartitionKey = &k
	}
	if !r.def.IsZero() {
		d := r.def
		s.Default = &d
	}
	return json.Marshal(s)
}

func decode(data []byte) (resolver.Resolver, error) {
	var s struct {
		Kind         string                     `json:"kind"`
		PartitionKey *resolver.KeyDef           `json:"partitionKey"`
		Entries      map[string]json.RawMessage `json:"entries"`
		Default      json.RawMessage            `json:"default"`
	}
	if err := resolver.DecodeStrict(data, &s); err != nil {
		return nil, err
	}
	entries := make(map[string]resolver.Target, len(s.Entries))
	for v, raw := range s.Entries {
		t, err := resolver.DecodeTarget(fmt.Sprintf("entries[%q]", v), raw)
		if err != nil {
			return nil, err
		}
		entries[v] = t
	}
	def, err := resolver.DecodeTarget("default", s.Default)
	if err != nil {
		return nil, err
	}
	var key resolver.KeyDef
	if s.PartitionKey != nil {
		key = *s.PartitionKey
	}
	return New(key, entries, def)
}

func init() { resolver.Register(Kind, decode) }
