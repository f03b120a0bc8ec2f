package hashring

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/docshard/docshard/internal/linkset"
	"github.com/docshard/docshard/resolver"
)

// Kind is the "kind" of the hash resolver's JSON form.
const Kind = "hash"

// Flavours: how the ring's points and the keys' positions are computed (the
// JSON member "hash"). Any name registered with RegisterHashGenerator is also
// a flavour of the md5-style ring.
const (
	// FlavourMD5 is the default: the MD5 ring of docs/design.md#the-md5-flavour.
	FlavourMD5 = "md5"
	// FlavourXXHash is the md5-style ring with 64-bit xxHash (see XXHash).
	FlavourXXHash = "xxhash"
	// FlavourMurmur3 is the ring of the Node.js, Python and Java DocumentDB
	// SDKs (MurmurHash3 x86 32-bit, seed 0).
	FlavourMurmur3 = "murmur3"
	// FlavourDotnetX64 is the .NET Framework DocumentDB SDK's ring in a
	// 64-bit process.
	FlavourDotnetX64 = "dotnet-x64"
	// FlavourDotnetX86 is the .NET Framework DocumentDB SDK's ring in a
	// 32-bit process.
	FlavourDotnetX86 = "dotnet-x86"
)

// Strategies: how keys are assigned to collections (the JSON member
// "strategy").
const (
	// StrategyRing is consistent hashing on the flavour's ring (the default;
	// the JSON form omits "strategy" for it, as docs/design.md#resolver-json writes a ring).
	StrategyRing = "ring"
	// StrategyBounded is consistent hashing with bounded loads.
	StrategyBounded = "bounded"
	// StrategyBalanced is a weighted ring that holds every collection
	// within BalancedTolerance of the mean and moves close to the ideal
	// share of keys when collections change
	// (docs/design.md#the-balanced-strategy).
	StrategyBalanced = "balanced"
)

// Limits and defaults of virtual nodes.
const (
	// DefaultVirtualNodes is the default number of points per collection of
	// the md5-style rings ("md5", "xxhash", registered generators) and of
	// the bounded strategy.
	DefaultVirtualNodes = 16
	// DefaultVirtualNodesLegacy is the default of the compatibility
	// flavours, as their SDKs had it ("murmur3", "dotnet-x64",
	// "dotnet-x86").
	DefaultVirtualNodesLegacy = 128
	// MaxVirtualNodes is the most points per collection a resolver accepts
	// (MaxPoints bounds them over all collections). Balance stops improving
	// visibly long before (the largest collection's excess falls as
	// 1/sqrt(points): about 5% at 1000 points), while build time and memory
	// grow linearly (20 bytes and one hash per point); the bound only turns
	// away values no configuration means.
	MaxVirtualNodes = 1 << 16
	// MaxPoints caps points over all collections (collections × virtual
	// nodes): about 80 MB of ring and a second or so of hashing. A tree of
	// resolvers shares resolver.MaxWork (as many units) among its rings.
	MaxPoints = 1 << 22
	// MaxBoundedWork caps the bounded strategy's partitions × points: the
	// library walks the ring from each partition's place until a
	// collection has room, so with a tight load factor placement costs up
	// to that product (2^34 took about four seconds on a busy host; a
	// 19 KB definition past it took minutes).
	MaxBoundedWork = 1 << 34
	// boundedWorkUnit converts partitions × points into resolver.MaxWork's
	// units, so that MaxBoundedWork is MaxPoints units.
	boundedWorkUnit = MaxBoundedWork / MaxPoints
)

func isLegacyFlavour(name string) bool {
	switch name {
	case FlavourMurmur3, FlavourDotnetX64, FlavourDotnetX86:
		return true
	}
	return false
}

// Options configure a hash resolver. A nil *Options means every default: an
// md5 ring of 16 virtual nodes per collection and no partition key.
type Options struct {
	// PartitionKey is the documents' partition-key path(s) (JSON
	// "partitionKey"). The zero value means none, which suits a ring nested
	// in another resolver: it is handed keys, not documents.
	PartitionKey resolver.KeyDef
	// VirtualNodes is the number of points per collection (JSON
	// "virtualNodes"; for the bounded strategy, the library's replication
	// factor, at least 2). 0 means the default: 16, or 128 for "murmur3",
	// "dotnet-x64" and "dotnet-x86", or DefaultVirtualNodesBalanced (256)
	// for the balanced strategy. At most MaxVirtualNodes.
	VirtualNodes int
	// Hash is the flavour (JSON "hash"): "md5" (default), "xxhash",
	// "murmur3", "dotnet-x64", "dotnet-x86", or a name registered with
	// RegisterHashGenerator. The bounded and balanced strategies take
	// "md5", "xxhash" or a registered generator.
	Hash string
	// Strategy is "ring" (default), "bounded" or "balanced" (JSON
	// "strategy").
	Strategy string
	// LoadFactor caps a collection's partitions at about this multiple of
	// the mean (JSON "loadFactor"; bounded only): 1 to 100, 0 meaning
	// DefaultLoadFactor (1.25). Lower is more even but moves more keys when
	// collections change.
	LoadFactor float64
	// PartitionCount is the number of partitions the key space is cut into
	// (JSON "partitionCount"; bounded only): 0 means DefaultPartitionCount
	// (8191); at least MinPartitionsPerCollection (8) per collection, at
	// most MaxPartitionCount. Keep it fixed when collections are added: a
	// key's partition is its hash modulo this count.
	PartitionCount int
}

// Resolver is the consistent-hash resolver (kind "hash"). It is immutable
// and safe for concurrent use; ResolveForCreate takes no lock and, for
// string and number keys, allocates nothing.
type Resolver struct {
	key        resolver.KeyDef
	vnodes     int
	hash       string
	strategy   string
	loadFactor float64
	partitions int
	ring       *Ring
	single     [][]string // single[i] is {links[i]}: what ResolveForRead shares
}

var (
	_ resolver.Resolver     = (*Resolver)(nil)
	_ resolver.Kinded       = (*Resolver)(nil)
	_ resolver.KeyDefiner   = (*Resolver)(nil)
	_ resolver.TextResolver = (*Resolver)(nil)
	_ json.Marshaler        = (*Resolver)(nil)
)

// New builds a hash resolver over the collection links, in the given order
// (the order breaks ties between equal points, so it is part of the ring;
// links are kept verbatim, a trailing slash included, because the legacy
// flavours hash them as written). opts nil means defaults.
//
// Cost: one hash per point and a sort of the points, about 2-3 ms for 1000
// collections of 16 virtual nodes; the bounded strategy adds the library's
// placement, which grows with collections² × virtual nodes (about 0.25 s for
// 1000 collections of 16). A resolver of the same settings (links, flavour,
// strategy, virtual nodes) still in use lends its ring instead, so the same
// ring written many times in a tree, or decoded again for the next version
// of a state document, is built once. Errors are *resolver.ConfigError
// naming the setting ("collections[2]", "virtualNodes", "hash", ...).
func New(links []string, opts *Options) (*Resolver, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := linkset.CheckDistinct("collections", links); err != nil {
		return nil, err
	}
	r := &Resolver{key: o.PartitionKey, hash: o.Hash, strategy: o.Strategy, vnodes: o.VirtualNodes}
	if r.hash == "" {
		r.hash = FlavourMD5
	}
	if r.strategy == "" {
		r.strategy = StrategyRing
	}
	if r.strategy != StrategyRing && r.strategy != StrategyBounded && r.strategy != StrategyBalanced {
		return nil, resolver.Invalid("strategy", r.strategy, `want "ring", "bounded" or "balanced"`)
	}
	g := &Ring{links: slices.Clone(links), space: r.hash, flavour: r.hash}
	switch r.hash {
	case FlavourMD5, FlavourDotnetX64, FlavourDotnetX86:
		g.hk, g.space = hashMD5, FlavourMD5 // keys are placed by MD5 alike
	case FlavourXXHash:
		g.hk = hashXX
	case FlavourMurmur3:
		g.hk = hashMurmur
	default:
		gen, ok := lookupGenerator(r.hash)
		if !ok {
			return nil, resolver.Invalid("hash", r.hash, "unknown; want one of "+strings.Join(hashNames(), ", "))
		}
		g.hk, g.gen, g.size = hashCustom, gen, gen.Size()
	}
	if r.vnodes == 0 {
		r.vnodes = defaultVirtualNodes(r.hash, r.strategy)
	}
	if r.vnodes < 1 || r.vnodes > MaxVirtualNodes {
		return nil, resolver.Invalid("virtualNodes", r.vnodes, fmt.Sprintf("want 1 to %d (hashring.MaxVirtualNodes)", MaxVirtualNodes))
	}
	if len(links)*r.vnodes > MaxPoints {
		return nil, resolver.Invalid("virtualNodes", r.vnodes, fmt.Sprintf("%d collections × %d virtualNodes is %d points, more than hashring.MaxPoints = %d; lower virtualNodes or the number of collections", len(links), r.vnodes, len(links)*r.vnodes, MaxPoints))
	}
	if r.strategy != StrategyBounded {
		if o.LoadFactor != 0 {
			return nil, resolver.Invalid("loadFactor", o.LoadFactor, `applies only to strategy "bounded"`)
		}
		if o.PartitionCount != 0 {
			return nil, resolver.Invalid("partitionCount", o.PartitionCount, `applies only to strategy "bounded"`)
		}
	}
	switch r.strategy {
	case StrategyBalanced:
		if isLegacyFlavour(r.hash) {
			return nil, resolver.Invalid("hash", r.hash, `the balanced strategy takes "md5", "xxhash" or a registered generator; the legacy flavours are rings only`)
		}
		g.kind = kindDigest
	case StrategyRing:
		g.kind = kindDigest
		if g.hk == hashMurmur {
			g.kind = kindMurmur
		}
	default: // bounded
		if err := r.checkBounded(len(links), &o); err != nil {
			return nil, err
		}
		g.kind = kindBounded
	}
	// Every setting is valid: a resolver of the same settings may already
	// have built the ring.
	key := ringKey(r.strategy, r.hash, r.vnodes, r.loadFactor, r.partitions, links)
	if shared := sharedRing(key); shared != nil {
		return r.withRing(shared), nil
	}
	var err error
	switch r.strategy {
	case StrategyBalanced:
		err = g.buildBalanced(r.vnodes)
	case StrategyRing:
		err = g.build(g.chain(r.hash), r.vnodes)
	default:
		err = g.buildBounded(r.vnodes, r.partitions, r.loadFactor)
	}
	if err != nil {
		return nil, err
	}
	return r.withRing(shareRing(key, g)), nil
}

// checkBounded checks the bounded strategy's settings and fills in their
// defaults.
func (r *Resolver) checkBounded(nlinks int, o *Options) error {
	if isLegacyFlavour(r.hash) {
		return resolver.Invalid("hash", r.hash, `the bounded strategy takes "md5", "xxhash" or a registered generator; the legacy flavours are rings only`)
	}
	if r.vnodes < 2 {
		// The library looks for room among all points but the one before
		// the partition's place: with one point per collection a partition
		// can miss the only collection with room.
		return resolver.Invalid("virtualNodes", r.vnodes, "the bounded strategy needs at least 2 per collection")
	}
	r.loadFactor = o.LoadFactor
	if r.loadFactor == 0 {
		r.loadFactor = DefaultLoadFactor
	}
	if math.IsNaN(r.loadFactor) || r.loadFactor < 1 || r.loadFactor > MaxLoadFactor {
		return resolver.Invalid("loadFactor", o.LoadFactor, fmt.Sprintf("want 1 to %g", MaxLoadFactor))
	}
	r.partitions = o.PartitionCount
	if r.partitions == 0 {
		r.partitions = DefaultPartitionCount
	}
	if least := MinPartitionsPerCollection * nlinks; r.partitions < least || r.partitions > MaxPartitionCount {
		return resolver.Invalid("partitionCount", r.partitions, fmt.Sprintf(
			"want %d (%d per collection) to %d (hashring.MaxPartitionCount)", least, MinPartitionsPerCollection, MaxPartitionCount))
	}
	if w := int64(r.partitions) * int64(nlinks*r.vnodes); w > MaxBoundedWork {
		return resolver.Invalid("partitionCount", r.partitions, fmt.Sprintf(
			"%d partitionCount × %d points (%d collections × %d virtualNodes) is %d, more than hashring.MaxBoundedWork = %d: placing them could take minutes; lower partitionCount, virtualNodes or the number of collections",
			r.partitions, nlinks*r.vnodes, nlinks, r.vnodes, w, int64(MaxBoundedWork)))
	}
	return nil
}

// withRing finishes r with its placement table and the one-element link
// lists ResolveForRead hands out.
func (r *Resolver) withRing(g *Ring) *Resolver {
	r.ring = g
	r.single = make([][]string, len(g.links))
	for i := range g.links {
		r.single[i] = g.links[i : i+1 : i+1]
	}
	return r
}

// Kind returns "hash".
func (r *Resolver) Kind() string { return Kind }

// PartitionKey extracts the key of doc at the resolver's partitionKey path(s)
// (see resolver.KeyDef.Extract): a string, a float64, a resolver.Null or a
// resolver.CompositeKey. A resolver without partitionKey, or a document
// without the key, gives an error wrapping resolver.ErrNoPartitionKey.
func (r *Resolver) PartitionKey(doc any) (any, error) { return r.key.Extract(doc) }

// ResolveForCreate returns the collection owning key: a string, a number
// (hashed as its RFC 8785 text, so 42, 42.0 and int64(42) agree) or a
// resolver.CompositeKey (hashed as its canonical JSON array). Other types
// are an error wrapping resolver.ErrKeyType; nil wraps
// resolver.ErrNoPartitionKey. Cost: one hash of the key's text and a binary
// search; no lock, no allocation for strings and numbers.
func (r *Resolver) ResolveForCreate(key any) (string, error) {
	i, err := r.ring.Owner(key)
	if err != nil {
		return "", err
	}
	return r.ring.links[i], nil
}

// ResolveTextForCreate returns the collection owning the key whose
// canonical text is text (resolver.KeyDef.AppendKey writes it): what
// ResolveForCreate returns for that key. It does not keep text and
// allocates nothing (resolver.TextResolver).
func (r *Resolver) ResolveTextForCreate(text []byte) (string, error) {
	return r.ring.links[r.ring.OwnerString(unsafe.String(unsafe.SliceData(text), len(text)))], nil
}

// ResolveForRead returns the one collection owning key, or every collection
// in the configured order for a nil key (a copy). Errors as
// ResolveForCreate. For a key it returns a one-element slice shared by
// every caller, allocating nothing: do not modify it (the
// resolver.Resolver contract).
func (r *Resolver) ResolveForRead(key any) ([]string, error) {
	if key == nil {
		return slices.Clone(r.ring.links), nil
	}
	i, err := r.ring.Owner(key)
	if err != nil {
		return nil, err
	}
	return r.single[i], nil
}

// Ring returns the placement table (points, owners, exact shares), for
// tools such as `docshard plan`. It is shared, immutable.
func (r *Resolver) Ring() *Ring { return r.ring }

// Collections returns the collection links in the configured order. It
// copies.
func (r *Resolver) Collections() []string { return slices.Clone(r.ring.links) }

// VirtualNodes returns the number of points per collection.
func (r *Resolver) VirtualNodes() int { return r.vnodes }

// Hash returns the flavour ("md5", "xxhash", "murmur3", "dotnet-x64",
// "dotnet-x86" or a registered generator's name).
func (r *Resolver) Hash() string { return r.hash }

// Strategy returns "ring", "bounded" or "balanced".
func (r *Resolver) Strategy() string { return r.strategy }

// LoadFactor returns the bounded strategy's load factor (0 for a ring).
func (r *Resolver) LoadFactor() float64 { return r.loadFactor }

// PartitionCount returns the bounded strategy's partition count (0 for a
// ring).
func (r *Resolver) PartitionCount() int { return r.partitions }

// KeyDef returns the partitionKey setting (the zero KeyDef when none).
func (r *Resolver) KeyDef() resolver.KeyDef { return r.key }

// Options returns the resolver's settings with every default filled in, so
// New(r.Collections(), r.Options()) builds the same resolver.
func (r *Resolver) Options() *Options {
	return &Options{
		PartitionKey:   r.key,
		VirtualNodes:   r.vnodes,
		Hash:           r.hash,
		Strategy:       r.strategy,
		LoadFactor:     r.loadFactor,
		PartitionCount: r.partitions,
	}
}

// spec is the JSON form. Every setting is written, defaults included, so the
// stored form places keys alike whatever later versions choose as defaults;
// "strategy" (with "loadFactor" and "partitionCount") is written for the
// bounded strategy only, because its absence means the ring, in the form
// docs/design.md#resolver-json fixes.
type spec struct {
	Kind           string          `json:"kind"`
	PartitionKey   resolver.KeyDef `json:"partitionKey,omitzero"`
	Collections    []string        `json:"collections"`
	VirtualNodes   int             `json:"virtualNodes"`
	Hash           string          `json:"hash"`
	Strategy       string          `json:"strategy,omitempty"`
	LoadFactor     float64         `json:"loadFactor,omitempty"`
	PartitionCount int             `json:"partitionCount,omitempty"`
}

// MarshalJSON writes the resolver with every setting, defaults included:
// {"kind":"hash","partitionKey":"/userId","collections":[...],
// "virtualNodes":16,"hash":"md5"}, plus "strategy":"bounded",
// "loadFactor" and "partitionCount" for the bounded strategy, and
// "strategy":"balanced" for the balanced one.
// "partitionKey" is left out when the resolver has none.
func (r *Resolver) MarshalJSON() ([]byte, error) {
	s := spec{Kind: Kind, Collections: r.ring.links, VirtualNodes: r.vnodes, Hash: r.hash}
	s.PartitionKey = r.key
	switch r.strategy {
	case StrategyBounded:
		s.Strategy, s.LoadFactor, s.PartitionCount = r.strategy, r.loadFactor, r.partitions
	case StrategyBalanced:
		s.Strategy = r.strategy
	}
	return json.Marshal(s)
}

// decode is the kind's JSON decoder (registered with resolver.Register).
// Members may be omitted (their defaults apply) but not present with a
// meaningless value: "virtualNodes": 0, "hash": "", a "loadFactor" or
// "partitionCount" of 0 are errors, as are unknown members.
func decode(data []byte) (resolver.Resolver, error) {
	var s struct {
		Kind           string          `json:"kind"`
		PartitionKey   resolver.KeyDef `json:"partitionKey"`
		Collections    []string        `json:"collections"`
		VirtualNodes   *int            `json:"virtualNodes"`
		Hash           *string         `json:"hash"`
		Strategy       *string         `json:"strategy"`
		LoadFactor     *float64        `json:"loadFactor"`
		PartitionCount *int            `json:"partitionCount"`
	}
	if err := resolver.DecodeStrict(data, &s); err != nil {
		return nil, err
	}
	if s.Kind != Kind {
		return nil, resolver.Invalid("kind", s.Kind, fmt.Sprintf("want %q", Kind))
	}
	o := Options{PartitionKey: s.PartitionKey}
	if s.Collections == nil {
		return nil, resolver.Invalid("collections", nil, "missing: a hash resolver needs at least one collection")
	}
	if p := s.VirtualNodes; p != nil {
		if *p == 0 {
			return nil, resolver.Invalid("virtualNodes", 0, fmt.Sprintf("want 1 to %d", MaxVirtualNodes))
		}
		o.VirtualNodes = *p
	}
	if p := s.Hash; p != nil {
		if *p == "" {
			return nil, resolver.Invalid("hash", "", "empty; want one of "+strings.Join(hashNames(), ", "))
		}
		o.Hash = *p
	}
	if p := s.Strategy; p != nil {
		if *p == "" {
			return nil, resolver.Invalid("strategy", "", `empty; want "ring", "bounded" or "balanced"`)
		}
		o.Strategy = *p
	}
	if p := s.LoadFactor; p != nil {
		if *p == 0 {
			return nil, resolver.Invalid("loadFactor", 0.0, fmt.Sprintf("want 1 to %g", MaxLoadFactor))
		}
		o.LoadFactor = *p
	}
	if p := s.PartitionCount; p != nil {
		if *p == 0 {
			return nil, resolver.Invalid("partitionCount", 0, "must be positive")
		}
		o.PartitionCount = *p
	}
	return New(s.Collections, &o)
}

func init() {
	resolver.Register(Kind, decode)
	resolver.RegisterWork(Kind, work)
}

// work is what building a hash resolver costs in resolver.MaxWork's units:
// one per point, and for the bounded strategy partitions × points / 4096
// more (the library's placement walks the ring from each partition's place
// until a collection has room). It reads the settings leniently; decode
// reports what is malformed.
func work(data []byte) resolver.Work {
	var s struct {
		Collections    []json.RawMessage `json:"collections"`
		VirtualNodes   int               `json:"virtualNodes"`
		Hash           string            `json:"hash"`
		Strategy       string            `json:"strategy"`
		PartitionCount int               `json:"partitionCount"`
	}
	if json.Unmarshal(data, &s) != nil {
		return resolver.Work{}
	}
	v := int64(s.VirtualNodes)
	if v <= 0 {
		v = int64(defaultVirtualNodes(s.Hash, s.Strategy))
	}
	v = min(v, MaxVirtualNodes)
	n := int64(len(s.Collections))
	points := n * v
	if s.Strategy != StrategyBounded {
		return resolver.Work{
			Units: points,
			Shape: fmt.Sprintf("a ring of %d collections × %d virtualNodes", n, v),
			Lower: []string{"virtualNodes", "the number of collections"},
		}
	}
	p := int64(s.PartitionCount)
	if p <= 0 {
		p = DefaultPartitionCount
	}
	p = min(p, MaxPartitionCount)
	return resolver.Work{
		Units: points + p*points/boundedWorkUnit,
		Shape: fmt.Sprintf("a bounded ring of %d collections × %d virtualNodes with partitionCount %d", n, v, p),
		Lower: []string{"partitionCount", "virtualNodes", "the number of collections"},
	}
}

// defaultVirtualNodes is the number of points per collection when the
// definition gives none: the balanced strategy's, a legacy flavour's, or
// the ring's default. New builds with it and the decoder's work estimate
// counts with it, so the two cannot disagree.
func defaultVirtualNodes(hash, strategy string) int {
	switch {
	case strategy == StrategyBalanced:
		return DefaultVirtualNodesBalanced
	case isLegacyFlavour(hash):
		return DefaultVirtualNodesLegacy
	}
	return DefaultVirtualNodes
}
