package transition

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/docshard/docshard/internal/linkset"
	"github.com/docshard/docshard/resolver"
)

// Kind is the "kind" of the transition resolver's JSON form.
const Kind = "transition"

// Read modes: which placement reads consult.
const (
	ReadCurrent = "current" // the current placement only
	ReadNext    = "next"    // the next placement only
	ReadBoth    = "both"    // next first, then current, each collection once
	ReadNone    = "none"    // refused: ErrMigrationInProgress
)

// Write targets: which placement new documents go to.
const (
	WriteNext    = "next"    // the default, as the .NET SDK's sample had it
	WriteCurrent = "current" // until the documents have moved
)

// ErrMigrationInProgress is wrapped by the error of a read under read mode
// "none".
var ErrMigrationInProgress = errors.New("transition: migration in progress: reads are refused (read mode none)")

// ErrMoving is wrapped by the error of a write to a key that moves while the
// transition is frozen (a reshard's cutover). It is brief: a router that
// follows the shared state waits for the next version and writes then.
var ErrMoving = resolver.ErrMoving

// Resolver is the transition resolver. It is immutable and safe for
// concurrent use; it allocates nothing beyond what current and next do,
// except for reads in mode "both" of a key (the union of two lists) and a
// nil key (computed once, when built).
type Resolver struct {
	current, next resolver.Target
	readMode      string
	writeTo       string
	frozen        bool
	write         resolver.Target // current or next, as writeTo says
	key           resolver.KeyDef
	all           []string // ResolveForRead(nil) in the read mode
	shared        []string // collections of both placements (modes current and next)
}

var (
	_ resolver.Resolver   = (*Resolver)(nil)
	_ resolver.Kinded     = (*Resolver)(nil)
	_ resolver.KeyDefiner = (*Resolver)(nil)
	_ resolver.Owner      = (*Resolver)(nil)
	_ json.Marshaler      = (*Resolver)(nil)
)

// Options qualify New. A nil *Options means read mode "both" and writes to
// "next".
type Options struct {
	// ReadMode is "current", "next", "both" (default) or "none".
	ReadMode string
	// WriteTo is "next" (default) or "current".
	WriteTo string
	// Frozen refuses writes to keys that move (whose two placements
	// differ) with ErrMoving, for the moment a reshard switches them over;
	// other keys are written as usual. JSON "frozen", written only when
	// set.
	Frozen bool
}

// New builds a transition from current to next, each a collection link or
// a resolver. The two must read the same partition key: when both define
// one (resolver.KeyDefiner), the definitions must be equal; the one that
// defines it lends it to the transition. Errors are *resolver.ConfigError
// naming the field ("readMode", "next", ...).
func New(current, next resolver.Target, opts *Options) (*Resolver, error) {
	o := Options{ReadMode: ReadBoth, WriteTo: WriteNext}
	if opts != nil {
		if opts.ReadMode != "" {
			o.ReadMode = opts.ReadMode
		}
		if opts.WriteTo != "" {
			o.WriteTo = opts.WriteTo
		}
	}
	if err := checkTarget("current", current); err != nil {
		return nil, err
	}
	if err := checkTarget("next", next); err != nil {
		return nil, err
	}
	r := &Resolver{current: current, next: next, readMode: o.ReadMode, writeTo: o.WriteTo, frozen: opts != nil && opts.Frozen}
	switch o.WriteTo {
	case WriteNext:
		r.write = next
	case WriteCurrent:
		r.write = current
	default:
		return nil, resolver.Invalid("writeTo", o.WriteTo, `want "next" or "current"`)
	}
	ck, nk := keyOf(current), keyOf(next)
	switch {
	case !ck.IsZero() && !nk.IsZero() && !sameKey(ck, nk):
		return nil, resolver.Invalid("next.partitionKey", nk.String(), fmt.Sprintf("differs from current's %s: a document has one key, so both placements must read the same one", ck))
	case !ck.IsZero():
		r.key = ck
	default:
		r.key = nk
	}
	switch o.ReadMode {
	case ReadCurrent:
		r.all = current.Links()
	case ReadNext:
		r.all = next.Links()
	case ReadBoth:
		r.all = linkset.Union(next.Links(), current.Links())
	case ReadNone:
	default:
		return nil, resolver.Invalid("readMode", o.ReadMode, `want "current", "next", "both" or "none"`)
	}
	if o.ReadMode == ReadCurrent || o.ReadMode == ReadNext {
		r.shared = intersect(current.Links(), next.Links())
	}
	return r, nil
}

// intersect returns the links of a that b names too, in a's order.
func intersect(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, l := range b {
		in[strings.Trim(l, "/")] = true
	}
	var out []string
	for _, l := range a {
		if in[strings.Trim(l, "/")] {
			out = append(out, l)
		}
	}
	return out
}

// SharedCollections returns, in read modes "current" and "next", the
// collections of both placements: they may hold documents the mode's
// placement puts elsewhere (copies on their way in before the switch, or
// left behind after it), which a reader must skip (resolver.Owner). In
// modes "both" and "none" it returns nil: "both" reads the two placements
// as the .NET SDK's sample did, next first, and a document that exists in
// both is seen twice by a query.
func (r *Resolver) SharedCollections() []string { return r.shared }

// Owner returns the collection that owns key in the read mode: where the
// current placement puts it in mode "current", the next placement's in
// "next", the write placement's otherwise.
func (r *Resolver) Owner(key any) (string, error) {
	switch r.readMode {
	case ReadCurrent:
		return r.current.ResolveForCreate(key)
	case ReadNext:
		return r.next.ResolveForCreate(key)
	}
	return r.write.ResolveForCreate(key)
}

func checkTarget(field string, t resolver.Target) error {
	if t.IsZero() {
		return resolver.Invalid(field, nil, "missing: want a collection link or a resolver")
	}
	if t.Resolver == nil {
		return resolver.InField(field, resolver.ValidateLink(t.Link))
	}
	if t.Link != "" {
		return resolver.Invalid(field, t.Link, "set a link or a resolver, not both")
	}
	return nil
}

func keyOf(t resolver.Target) resolver.KeyDef {
	if kd, ok := t.Resolver.(resolver.KeyDefiner); ok {
		return kd.KeyDef()
	}
	return resolver.KeyDef{}
}

func sameKey(a, b resolver.KeyDef) bool {
	pa, pb := a.Paths(), b.Paths()
	if len(pa) != len(pb) {
		return false
	}
	for i := range pa {
		if pa[i] != pb[i] {
			return false
		}
	}
	return true
}

// Kind returns "transition".
func (r *Resolver) Kind() string { return Kind }

// Current and Next return the two placements.
func (r *Resolver) Current() resolver.Target { return r.current }

// Next returns the placement the transition moves to.
func (r *Resolver) Next() resolver.Target { return r.next }

// ReadMode returns the read mode.
func (r *Resolver) ReadMode() string { return r.readMode }

// WriteTo returns the placement new documents go to.
func (r *Resolver) WriteTo() string { return r.writeTo }

// Frozen reports whether writes to moving keys are refused
// (resolver.ErrMoving): the resolver.Freezer capability, which a router
// following the shared state polls faster for.
func (r *Resolver) Frozen() bool { return r.frozen }

var _ resolver.Freezer = (*Resolver)(nil)

// Moves reports whether key's two placements differ.
func (r *Resolver) Moves(key any) (bool, error) {
	c, err := r.current.ResolveForCreate(key)
	if err != nil {
		return false, err
	}
	n, err := r.next.ResolveForCreate(key)
	if err != nil {
		return false, err
	}
	return c != n, nil
}

// frozenOut returns the error of a write to key while frozen: ErrMoving for
// a key that moves, nil for one that does not.
func (r *Resolver) frozenOut(key any) error {
	if !r.frozen {
		return nil
	}
	moves, err := r.Moves(key)
	if err != nil {
		return err
	}
	if moves {
		return &resolver.KeyError{Key: key, Err: ErrMoving, Reason: "the key is being switched to its new collection"}
	}
	return nil
}

// KeyDef returns the partition key both placements read (zero when neither
// defines one).
func (r *Resolver) KeyDef() resolver.KeyDef { return r.key }

// PartitionKey extracts a document's key: by the transition's key
// definition, else by the write placement's resolver.
func (r *Resolver) PartitionKey(doc any) (any, error) {
	if !r.key.IsZero() {
		return r.key.Extract(doc)
	}
	if r.write.Resolver != nil {
		return r.write.Resolver.PartitionKey(doc)
	}
	return nil, &resolver.KeyError{Err: resolver.ErrNoPartitionKey, Reason: "neither placement defines a partition key"}
}

// ResolveForCreate returns where a new document with key goes: the
// writeTo placement's collection. Cost: that placement's.
func (r *Resolver) ResolveForCreate(key any) (string, error) {
	if key == nil {
		return "", &resolver.KeyError{Err: resolver.ErrNoPartitionKey}
	}
	if err := r.frozenOut(key); err != nil {
		return "", err
	}
	return r.write.ResolveForCreate(key)
}

// ResolveForRead returns the collections that may hold key under the read
// mode: next's, current's, or both (next's first, each collection once). A
// nil key returns every collection of the mode. Mode "none" is an error
// wrapping ErrMigrationInProgress.
func (r *Resolver) ResolveForRead(key any) ([]string, error) {
	if r.readMode == ReadNone {
		return nil, &resolver.KeyError{Key: key, Err: ErrMigrationInProgress}
	}
	if key == nil {
		return r.all, nil
	}
	switch r.readMode {
	case ReadCurrent:
		return r.current.ResolveForRead(key)
	case ReadNext:
		return r.next.ResolveForRead(key)
	}
	n, err := r.next.ResolveForRead(key)
	if err != nil {
		return nil, err
	}
	c, err := r.current.ResolveForRead(key)
	if err != nil {
		return nil, err
	}
	if len(n) == 1 && len(c) == 1 && n[0] == c[0] {
		return n, nil // the key does not move: the shared list, no allocation
	}
	return linkset.Union(n, c), nil
}

// Holders returns every collection that may hold a document with key: the
// owner (see Owner), then the other placement's collection for the key
// when it differs. Cost: both placements' ResolveForCreate, and the union
// of two lists for a key that moves.
func (r *Resolver) Holders(key any) ([]string, error) {
	if err := r.frozenOut(key); err != nil {
		return nil, err
	}
	c, err := r.current.ResolveForCreate(key)
	if err != nil {
		return nil, err
	}
	n, err := r.next.ResolveForCreate(key)
	if err != nil {
		return nil, err
	}
	if r.readMode == ReadCurrent || (r.readMode != ReadNext && r.writeTo == WriteCurrent) {
		return linkset.Union([]string{c}, []string{n}), nil
	}
	return linkset.Union([]string{n}, []string{c}), nil
}

// spec is the JSON form, fields in the order docs/design.md#resolver-json
// writes them.
type spec struct {
	Kind     string          `json:"kind"`
	ReadMode string          `json:"readMode"`
	WriteTo  string          `json:"writeTo"`
	Frozen   bool            `json:"frozen,omitempty"`
	Current  resolver.Target `json:"current"`
	Next     resolver.Target `json:"next"`
}

// MarshalJSON writes the transition in its JSON form, every setting written
// out.
func (r *Resolver) MarshalJSON() ([]byte, error) {
	return json.Marshal(spec{Kind: Kind, ReadMode: r.readMode, WriteTo: r.writeTo, Frozen: r.frozen, Current: r.current, Next: r.next})
}

func decode(data []byte) (resolver.Resolver, error) {
	var s struct {
		Kind     string          `json:"kind"`
		ReadMode string          `json:"readMode"`
		WriteTo  string          `json:"writeTo"`
		Frozen   bool            `json:"frozen"`
		Current  json.RawMessage `json:"current"`
		Next     json.RawMessage `json:"next"`
	}
	if err := resolver.DecodeStrict(data, &s); err != nil {
		return nil, err
	}
	cur, err := resolver.DecodeTarget("current", s.Current)
	if err != nil {
		return nil, err
	}
	next, err := resolver.DecodeTarget("next", s.Next)
	if err != nil {
		return nil, err
	}
	return New(cur, next, &Options{ReadMode: s.ReadMode, WriteTo: s.WriteTo, Frozen: s.Frozen})
}

func init() { resolver.Register(Kind, decode) }
