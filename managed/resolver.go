package managed

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/internal/provision"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
)

// Kind is the "kind" of the managed resolver's JSON form.
const Kind = "managed"

// MaxCount is the most collections a managed resolver names.
const MaxCount = 10000

// Options configure a managed resolver. A nil *Options means an md5 ring of
// 16 virtual nodes, no partition key, and default collections.
type Options struct {
	// PartitionKey is the documents' partition-key path(s) (JSON
	// "partitionKey"); the collections are partitioned by its first path.
	PartitionKey resolver.KeyDef
	// VirtualNodes and Hash are the ring's (JSON "virtualNodes", "hash"),
	// as hashring.Options has them; 0 and "" mean its defaults.
	VirtualNodes int
	Hash         string
	// Template is the spec of the collections (JSON "template":
	// "defaultTtl", "indexingPolicy"); its partition-key path, when given,
	// must be the partition key's first path. nil means defaults.
	Template *store.CollectionSpec
}

// Resolver is the managed hash resolver (kind "managed"), the .NET SDK
// sample's ManagedHashPartitionResolver made shareable: a hash ring over
// the collections a template names, "{database}/colls/{prefix}0" to
// "{prefix}{count-1}", each created from the template's spec (Ensure). It
// places keys exactly as a "hash" resolver over the same links does. It is
// immutable and safe for concurrent use; its costs are the ring's.
type Resolver struct {
	*hashring.Resolver
	db       string
	prefix   string
	count    int
	vnodes   int
	hash     string
	template store.CollectionSpec
	links    []string
}

var (
	_ resolver.Resolver     = (*Resolver)(nil)
	_ resolver.Kinded       = (*Resolver)(nil)
	_ resolver.KeyDefiner   = (*Resolver)(nil)
	_ resolver.TextResolver = (*Resolver)(nil)
	_ resolver.Provisioner  = (*Resolver)(nil)
	_ json.Marshaler        = (*Resolver)(nil)
)

// New builds a managed resolver over count collections of database dbLink
// named prefix and a sequence number from 0. Errors are
// *resolver.ConfigError naming the field ("database", "collectionPrefix",
// "count", "template.partitionKeyPath", or the ring's).
func New(dbLink, prefix string, count int, opts *Options) (*Resolver, error) {
	o := opt.Of(opts)
	dbID, err := link.ParseDatabase(dbLink)
	if err != nil {
		return nil, resolver.Invalid("database", dbLink, "want a database link dbs/{db}")
	}
	if err := provision.CheckPrefix(prefix, "the collections are named by it"); err != nil {
		return nil, err
	}
	if count < 1 || count > MaxCount {
		return nil, resolver.Invalid("count", count, fmt.Sprintf("want 1 to %d collections", MaxCount))
	}
	r := &Resolver{db: "dbs/" + dbID, prefix: prefix, count: count, hash: o.Hash}
	for i := range count {
		r.links = append(r.links, r.db+"/colls/"+prefix+strconv.Itoa(i))
	}
	if r.template, err = provision.Template(o.Template, o.PartitionKey); err != nil {
		return nil, err
	}
	ring, err := hashring.New(r.links, &hashring.Options{PartitionKey: o.PartitionKey, VirtualNodes: o.VirtualNodes, Hash: o.Hash})
	if err != nil {
		return nil, err
	}
	r.Resolver, r.vnodes = ring, o.VirtualNodes
	return r, nil
}

// Kind returns "managed".
func (r *Resolver) Kind() string { return Kind }

// Database returns the database link, "dbs/{db}".
func (r *Resolver) Database() string { return r.db }

// Prefix returns the collection prefix.
func (r *Resolver) Prefix() string { return r.prefix }

// Count returns the number of collections.
func (r *Resolver) Count() int { return r.count }

// Collections returns the collection links, in sequence (a copy).
func (r *Resolver) Collections() []string { return append([]string(nil), r.links...) }

// Template returns the spec the collections are created with, partitioned
// by the partition key's first path.
func (r *Resolver) Template() store.CollectionSpec { return r.template }

// Provision implements resolver.Provisioner: every collection, created
// from the template when missing, partitioned by the partition key's first
// path (empty: "/id").
func (r *Resolver) Provision() resolver.Provision {
	return provision.Provision(r.template, r.Collections(), nil, "")
}

// WithCount returns the same resolver over n collections. Placing keys
// differently, it is a new placement: move a database to it with Resize,
// which reshards.
func (r *Resolver) WithCount(n int) (*Resolver, error) {
	t := r.template
	return New(r.db, r.prefix, n, &Options{PartitionKey: r.KeyDef(), VirtualNodes: r.vnodes, Hash: r.hash, Template: &t})
}

// spec is the JSON form.
type spec struct {
	Kind             string                `json:"kind"`
	PartitionKey     resolver.KeyDef       `json:"partitionKey,omitzero"`
	Database         string                `json:"database"`
	CollectionPrefix string                `json:"collectionPrefix"`
	Count            int                   `json:"count"`
	VirtualNodes     int                   `json:"virtualNodes,omitempty"`
	Hash             string                `json:"hash,omitempty"`
	Template         *store.CollectionSpec `json:"template,omitempty"`
}

// MarshalJSON writes the resolver in its JSON form:
// {"kind":"managed","partitionKey":"/userId","database":"dbs/app",
// "collectionPrefix":"u","count":3}, with "virtualNodes", "hash" and
// "template" when set.
func (r *Resolver) MarshalJSON() ([]byte, error) {
	return json.Marshal(spec{Kind: Kind, PartitionKey: r.KeyDef(), Database: r.db, CollectionPrefix: r.prefix, Count: r.count,
		VirtualNodes: r.vnodes, Hash: r.hash, Template: provision.JSON(r.template)})
}

func decode(data []byte) (resolver.Resolver, error) {
	var s struct {
		Kind             string                `json:"kind"`
		PartitionKey     resolver.KeyDef       `json:"partitionKey"`
		Database         string                `json:"database"`
		CollectionPrefix string                `json:"collectionPrefix"`
		Count            *int                  `json:"count"`
		VirtualNodes     *int                  `json:"virtualNodes"`
		Hash             string                `json:"hash"`
		Template         *store.CollectionSpec `json:"template"`
	}
	if err := resolver.DecodeStrict(data, &s); err != nil {
		return nil, err
	}
	if s.Kind != Kind {
		return nil, resolver.Invalid("kind", s.Kind, fmt.Sprintf("want %q", Kind))
	}
	if s.Count == nil {
		return nil, resolver.Invalid("count", nil, "missing: how many collections")
	}
	o := &Options{PartitionKey: s.PartitionKey, Hash: s.Hash, Template: s.Template}
	if s.VirtualNodes != nil {
		if *s.VirtualNodes == 0 {
			return nil, resolver.Invalid("virtualNodes", 0, "want at least 1")
		}
		o.VirtualNodes = *s.VirtualNodes
	}
	return New(s.Database, s.CollectionPrefix, *s.Count, o)
}

func init() { resolver.Register(Kind, decode) }
