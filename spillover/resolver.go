package spillover

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/docshard/docshard/internal/linkset"
	"github.com/docshard/docshard/internal/provision"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/rangeresolver"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
)

// Kind is the "kind" of the spillover resolver's JSON form.
const Kind = "spillover"

// DefaultFillRatio is the fill ratio when none is given: the next
// collection is opened once the newest holds 90% of its limit, leaving a
// tenth of the limit for the writes made before every writer has moved on;
// past the limit the store's quota refuses them, and they go to the next
// collection (docs/design.md#the-limit).
const DefaultFillRatio = 0.9

// Range key types (JSON "rangeType").
const (
	RangeTime   = "time"   // RFC 3339 strings, compared as instants
	RangeNumber = "number" // JSON numbers
	RangeString = "string" // strings, compared byte-wise
)

// Options configure a spillover resolver. A nil *Options is an error: a
// spillover needs a prefix and a limit.
type Options struct {
	// PartitionKey is the documents' partition-key path(s) (JSON
	// "partitionKey"); the collections are partitioned by its first path.
	PartitionKey resolver.KeyDef
	// CollectionPrefix names the collections (JSON "collectionPrefix"):
	// prefix followed by a decimal sequence number, "log0", "log1", ...
	CollectionPrefix string
	// MaxDocuments and MaxBytes are a collection's limit (JSON
	// "maxDocuments", "maxBytes"); at least one must be positive. The
	// next collection is opened when either is reached times FillRatio,
	// and the collections are created with the limit as their quota
	// (store.CollectionSpec.Quota), which the embedded store and docshard
	// serve enforce on every write: no collection created so holds more.
	MaxDocuments int64
	MaxBytes     int64
	// FillRatio is the share of the limit at which the next collection is
	// opened (JSON "fillRatio"), in (0, 1]; 0 means DefaultFillRatio.
	FillRatio float64
	// Template is the spec new collections are created with (JSON
	// "template": "defaultTtl", "indexingPolicy"); its partition-key path,
	// when given, must be the partition key's first path, and its quota is
	// left out (MaxDocuments and MaxBytes set it). nil means defaults.
	Template *store.CollectionSpec
	// RangeKey is a field the documents carry that grows as they are
	// written, a time or a sequence number (JSON "rangeKey"); with it,
	// ResolveForRead of a rangeresolver.Range names only the collections
	// that may hold a value in the range. RangeType says how it compares
	// (RangeTime, RangeNumber or RangeString; JSON "rangeType").
	RangeKey  resolver.KeyDef
	RangeType string
	// Ranges are the measured bounds of sealed collections' range keys
	// (JSON "ranges"), recorded by the Coordinator after it sealed them;
	// a collection without one may hold any value.
	Ranges []Bounds
}

// Bounds are the lowest and highest range-key values a sealed collection
// holds, as JSON values of the resolver's range type.
type Bounds struct {
	Target string          `json:"target"`
	Low    json.RawMessage `json:"low"`
	High   json.RawMessage `json:"high"`
}

// Resolver is the spillover resolver (kind "spillover"): new documents go
// to the newest of its collections, reads to all of them, newest first
// (or, for a range of the range key, to those that may hold it). Which
// collection is newest changes only by a new resolver value, which the
// Coordinator publishes in the shared state when the newest fills up. It
// is immutable and safe for concurrent use; ResolveForCreate costs nothing
// but a nil check and allocates nothing.
type Resolver struct {
	key        resolver.KeyDef
	colls      []string // oldest first
	newestLink string
	read       []string // newest first: what ResolveForRead returns
	db         string
	prefix     string
	first      int64 // sequence number of colls[0]
	maxDocs    int64
	maxBytes   int64
	fill       float64
	template   store.CollectionSpec
	rangeKey   resolver.KeyDef
	rangeType  string
	ranges     map[string]span // sealed collections with measured bounds
	rangeList  []Bounds        // as given, in collection order
}

// span is a Bounds decoded for comparison.
type span struct{ low, high value }

// value is a range-key value of one of the three types.
type value struct {
	t time.Time
	f float64
	s string
}

var (
	_ resolver.Resolver     = (*Resolver)(nil)
	_ resolver.Kinded       = (*Resolver)(nil)
	_ resolver.KeyDefiner   = (*Resolver)(nil)
	_ resolver.TextResolver = (*Resolver)(nil)
	_ resolver.Provisioner  = (*Resolver)(nil)
	_ json.Marshaler        = (*Resolver)(nil)
)

// New builds a spillover resolver over collections, oldest first; the last
// is the newest, where documents are written. Every collection must be in
// one database and be named prefix followed by consecutive sequence
// numbers. Errors are *resolver.ConfigError naming the field
// ("maxDocuments", "fillRatio", "collections[1]", ...).
func New(collections []string, opts *Options) (*Resolver, error) {
	if opts == nil {
		return nil, resolver.Invalid("collectionPrefix", nil, "missing: a spillover needs a collection prefix and a limit")
	}
	o := *opts
	if err := linkset.CheckDistinct("collections", collections); err != nil {
		return nil, err
	}
	if err := provision.CheckPrefix(o.CollectionPrefix, "new collections are named by it"); err != nil {
		return nil, err
	}
	switch {
	case o.MaxDocuments < 0:
		return nil, resolver.Invalid("maxDocuments", o.MaxDocuments, "must not be negative")
	case o.MaxBytes < 0:
		return nil, resolver.Invalid("maxBytes", o.MaxBytes, "must not be negative")
	case o.MaxDocuments == 0 && o.MaxBytes == 0:
		return nil, resolver.Invalid("maxDocuments", int64(0), "a collection's limit must be at least 1 (or set maxBytes)")
	}
	if o.FillRatio == 0 {
		o.FillRatio = DefaultFillRatio
	}
	if !(o.FillRatio > 0 && o.FillRatio <= 1) {
		return nil, resolver.Invalid("fillRatio", o.FillRatio, "want a ratio in (0, 1]")
	}
	r := &Resolver{key: o.PartitionKey, colls: append([]string(nil), collections...), prefix: o.CollectionPrefix,
		maxDocs: o.MaxDocuments, maxBytes: o.MaxBytes, fill: o.FillRatio, rangeKey: o.RangeKey}
	for i, l := range collections {
		c, _ := link.ParseCollection(l)
		field := fmt.Sprintf("collections[%d]", i)
		if i == 0 {
			r.db = c.DatabaseLink()
		} else if c.DatabaseLink() != r.db {
			return nil, resolver.Invalid(field, l, fmt.Sprintf("in another database than collections[0] (%s)", r.db))
		}
		seq, ok := sequence(o.CollectionPrefix, c.Collection)
		if !ok {
			return nil, resolver.Invalid(field, l, fmt.Sprintf("want the collection prefix %q followed by a sequence number", o.CollectionPrefix))
		}
		if i == 0 {
			r.first = seq
		} else if seq != r.first+int64(i) {
			return nil, resolver.Invalid(field, l, fmt.Sprintf("want %s%d: collections follow each other in sequence, with no gap", o.CollectionPrefix, r.first+int64(i)))
		}
	}
	r.newestLink = collections[len(collections)-1]
	r.read = make([]string, len(collections))
	for i, l := range collections {
		r.read[len(collections)-1-i] = l
	}
	var err error
	if r.template, err = provision.Template(o.Template, o.PartitionKey); err != nil {
		return nil, err
	}
	r.template.Quota = &store.Quota{MaxDocuments: o.MaxDocuments, MaxBytes: o.MaxBytes}
	if err := r.setRanges(o); err != nil {
		return nil, err
	}
	return r, nil
}

// sequence returns the sequence number of collection id under prefix:
// prefix followed by decimal digits without a leading zero.
func sequence(prefix, id string) (int64, bool) {
	digits, ok := strings.CutPrefix(id, prefix)
	if !ok || digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

func (r *Resolver) setRanges(o Options) error {
	if o.RangeKey.IsZero() {
		switch {
		case o.RangeType != "":
			return resolver.Invalid("rangeType", o.RangeType, "set without a rangeKey")
		case len(o.Ranges) > 0:
			return resolver.Invalid("ranges", nil, "set without a rangeKey")
		}
		return nil
	}
	if o.RangeKey.Composite() {
		return resolver.Invalid("rangeKey", o.RangeKey.String(), "want one path")
	}
	switch o.RangeType {
	case RangeTime, RangeNumber, RangeString:
	case "":
		return resolver.Invalid("rangeType", nil, `missing: want "time", "number" or "string"`)
	default:
		return resolver.Invalid("rangeType", o.RangeType, `want "time", "number" or "string"`)
	}
	r.rangeType = o.RangeType
	r.ranges = make(map[string]span, len(o.Ranges))
	for i, b := range o.Ranges {
		field := fmt.Sprintf("ranges[%d]", i)
		sealed := false
		for _, l := range r.colls[:len(r.colls)-1] {
			sealed = sealed || link.Same(l, b.Target)
		}
		if !sealed {
			return resolver.Invalid(field+".target", b.Target, "not a sealed collection of this resolver (the newest has no bounds)")
		}
		id, _ := link.Canonical(b.Target)
		if _, dup := r.ranges[id]; dup {
			return resolver.Invalid(field+".target", b.Target, "bounds given twice")
		}
		lo, err := r.parse(b.Low)
		if err != nil {
			return resolver.InField(field+".low", err)
		}
		hi, err := r.parse(b.High)
		if err != nil {
			return resolver.InField(field+".high", err)
		}
		if r.cmp(lo, hi) > 0 {
			return resolver.Invalid(field, nil, "low is above high")
		}
		r.ranges[id] = span{lo, hi}
		r.rangeList = append(r.rangeList, Bounds{Target: b.Target, Low: append(json.RawMessage(nil), b.Low...), High: append(json.RawMessage(nil), b.High...)})
	}
	return nil
}

// parse reads a range-key value of the resolver's type from JSON.
func (r *Resolver) parse(raw json.RawMessage) (value, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return value{}, &resolver.ConfigError{Reason: "not a JSON value", Err: err}
	}
	return r.valueOf(v)
}

// valueOf reads a range-key value of the resolver's type from a Go value
// (a decoded JSON value, or a key's value).
func (r *Resolver) valueOf(v any) (value, error) {
	switch r.rangeType {
	case RangeTime:
		switch t := v.(type) {
		case time.Time:
			return value{t: t}, nil
		case string:
			tm, err := time.Parse(time.RFC3339Nano, t)
			if err != nil {
				return value{}, &resolver.ConfigError{Value: t, Reason: "not an RFC 3339 time"}
			}
			return value{t: tm}, nil
		}
	case RangeNumber:
		switch n := v.(type) {
		case float64:
			return value{f: n}, nil
		case int:
			return value{f: float64(n)}, nil
		case int64:
			return value{f: float64(n)}, nil
		case json.Number:
			f, err := n.Float64()
			return value{f: f}, err
		}
	case RangeString:
		if s, ok := v.(string); ok {
			return value{s: s}, nil
		}
	}
	return value{}, &resolver.ConfigError{Value: fmt.Sprint(v), Reason: "not a value of rangeType " + r.rangeType}
}

// cmp compares two values of the resolver's range type.
func (r *Resolver) cmp(a, b value) int {
	switch r.rangeType {
	case RangeTime:
		return a.t.Compare(b.t)
	case RangeNumber:
		switch {
		case a.f < b.f:
			return -1
		case a.f > b.f:
			return 1
		}
		return 0
	}
	return strings.Compare(a.s, b.s)
}

// Kind returns "spillover".
func (r *Resolver) Kind() string { return Kind }

// KeyDef returns the partition key the resolver reads documents by.
func (r *Resolver) KeyDef() resolver.KeyDef { return r.key }

// Collections returns the collections, oldest first (a copy).
func (r *Resolver) Collections() []string { return append([]string(nil), r.colls...) }

// Spreads reports whether a key may be in more than one collection: from
// the second collection on (resolver.Spreader), so a router's Create looks
// for the id in the sealed collections before writing the newest.
func (r *Resolver) Spreads() bool { return len(r.colls) > 1 }

// Newest returns the collection new documents go to.
func (r *Resolver) Newest() string { return r.newestLink }

// Database returns the collections' database link, "dbs/{db}".
func (r *Resolver) Database() string { return r.db }

// Prefix returns the collection prefix.
func (r *Resolver) Prefix() string { return r.prefix }

// NextLink returns the link of the collection that follows the newest:
// the prefix with the next sequence number.
func (r *Resolver) NextLink() string {
	return r.db + "/colls/" + r.prefix + strconv.FormatInt(r.first+int64(len(r.colls)), 10)
}

// Sequence returns the sequence number of a collection id under the
// resolver's prefix, and whether the id is one (the prefix followed by
// digits without a leading zero).
func (r *Resolver) Sequence(id string) (int64, bool) { return sequence(r.prefix, id) }

// Template returns the spec new collections are created with, partitioned
// by the partition key's first path, with the limit as their quota
// (store.CollectionSpec.Quota), so a store that enforces quotas refuses
// any write past it. Cost: a copy of the spec.
func (r *Resolver) Template() store.CollectionSpec {
	t := r.template
	q := *t.Quota
	t.Quota = &q
	return t
}

// userTemplate is the template as the resolver's JSON gives it: without
// the quota, which maxDocuments and maxBytes set.
func (r *Resolver) userTemplate() store.CollectionSpec {
	t := r.template
	t.Quota = nil
	return t
}

// sealedReason is what a *store.MissingCollectionError says of a sealed
// collection that is missing.
const sealedReason = "it is a sealed spillover collection, which held documents: created again empty, " +
	"they would be lost without a word; restore it, or publish a resolver without it (docshard state set)"

// wanted is what the spillover wants to exist: the newest collection,
// created from the template when missing, and every sealed one, which
// must exist.
func (r *Resolver) wanted() store.Wanted {
	var sealed []string
	for _, l := range r.colls {
		if l != r.newestLink {
			sealed = append(sealed, l)
		}
	}
	return store.Wanted{Create: []string{r.newestLink}, Keep: sealed, KeepReason: sealedReason, Spec: r.Template()}
}

// Provision implements resolver.Provisioner: the newest collection is
// created from the template (with the limit as its quota) when missing; the sealed ones must exist and
// are never created again (a missing one is reported: it held documents).
func (r *Resolver) Provision() resolver.Provision {
	w := r.wanted()
	return provision.Provision(w.Spec, w.Create, w.Keep, w.KeepReason)
}

// Limit returns the collection limit: documents and bytes (0 where unset).
func (r *Resolver) Limit() (documents, bytes int64) { return r.maxDocs, r.maxBytes }

// FillRatio returns the share of the limit at which the next collection is
// opened.
func (r *Resolver) FillRatio() float64 { return r.fill }

// Full reports whether a collection with this usage has reached the fill
// ratio of the limit (documents or bytes, whichever is set and reached
// first).
func (r *Resolver) Full(documents, bytes int64) bool {
	if r.maxDocs > 0 && float64(documents) >= r.fill*float64(r.maxDocs) {
		return true
	}
	return r.maxBytes > 0 && float64(bytes) >= r.fill*float64(r.maxBytes)
}

// RangeKey returns the range key (zero when none) and its type.
func (r *Resolver) RangeKey() (resolver.KeyDef, string) { return r.rangeKey, r.rangeType }

// Unmeasured returns the sealed collections whose range-key bounds are not
// recorded yet, oldest first; nil without a range key.
func (r *Resolver) Unmeasured() []string {
	if r.rangeKey.IsZero() {
		return nil
	}
	var out []string
	for _, l := range r.colls[:len(r.colls)-1] {
		if _, ok := r.ranges[canonical(l)]; !ok {
			out = append(out, l)
		}
	}
	return out
}

// options returns the resolver's settings, to build a changed copy.
func (r *Resolver) options() *Options {
	t := r.userTemplate()
	return &Options{PartitionKey: r.key, CollectionPrefix: r.prefix, MaxDocuments: r.maxDocs, MaxBytes: r.maxBytes,
		FillRatio: r.fill, Template: &t, RangeKey: r.rangeKey, RangeType: r.rangeType, Ranges: append([]Bounds(nil), r.rangeList...)}
}

// WithNext returns the resolver with NextLink() appended as the newest
// collection. Cost: a copy of the settings.
func (r *Resolver) WithNext() (*Resolver, error) {
	return New(append(r.Collections(), r.NextLink()), r.options())
}

// WithBounds returns the resolver with b recorded for a sealed collection.
func (r *Resolver) WithBounds(b Bounds) (*Resolver, error) {
	o := r.options()
	o.Ranges = append(o.Ranges, b)
	return New(r.colls, o)
}

// PartitionKey extracts a document's key by the resolver's partition key.
func (r *Resolver) PartitionKey(doc any) (any, error) {
	if r.key.IsZero() {
		return nil, &resolver.KeyError{Err: resolver.ErrNoPartitionKey, Reason: "the spillover resolver has no partitionKey"}
	}
	return r.key.Extract(doc)
}

// ResolveForCreate returns the newest collection, whatever the key; a nil
// key is an error wrapping resolver.ErrNoPartitionKey. No allocation.
func (r *Resolver) ResolveForCreate(key any) (string, error) {
	if key == nil {
		return "", &resolver.KeyError{Err: resolver.ErrNoPartitionKey}
	}
	return r.newestLink, nil
}

// ResolveTextForCreate returns the newest collection.
func (r *Resolver) ResolveTextForCreate([]byte) (string, error) { return r.newestLink, nil }

// ResolveForRead returns every collection, newest first (a key may be in
// any of them), sharing one slice. For a rangeresolver.Range of the range
// key's type it returns only the collections that may hold a value in the
// range: the newest, every sealed one whose bounds are not measured yet,
// and those whose bounds meet the range. Cost: nothing for a key; one
// comparison pair per sealed collection and a new slice for a range.
func (r *Resolver) ResolveForRead(key any) ([]string, error) {
	var q span
	switch k := key.(type) {
	case rangeresolver.Range[time.Time]:
		q = span{value{t: k.Low}, value{t: k.High}}
		return r.forRange(key, RangeTime, q)
	case rangeresolver.Range[float64]:
		q = span{value{f: k.Low}, value{f: k.High}}
		return r.forRange(key, RangeNumber, q)
	case rangeresolver.Range[string]:
		q = span{value{s: k.Low}, value{s: k.High}}
		return r.forRange(key, RangeString, q)
	}
	return r.read, nil
}

func (r *Resolver) forRange(key any, typ string, q span) ([]string, error) {
	if r.rangeKey.IsZero() || r.rangeType != typ {
		return nil, &resolver.KeyError{Key: key, Err: resolver.ErrKeyType,
			Reason: fmt.Sprintf("this spillover reads ranges of rangeType %q (rangeKey %q)", r.rangeType, r.rangeKey.String())}
	}
	if r.cmp(q.low, q.high) > 0 {
		return nil, nil
	}
	out := make([]string, 0, len(r.read))
	for _, l := range r.read {
		s, ok := r.ranges[canonical(l)]
		if !ok || (r.cmp(s.low, q.high) <= 0 && r.cmp(q.low, s.high) <= 0) {
			out = append(out, l)
		}
	}
	return out, nil
}

// spec is the JSON form, every setting written out.
type spec struct {
	Kind             string                `json:"kind"`
	PartitionKey     resolver.KeyDef       `json:"partitionKey,omitzero"`
	Collections      []string              `json:"collections"`
	CollectionPrefix string                `json:"collectionPrefix"`
	MaxDocuments     int64                 `json:"maxDocuments,omitempty"`
	MaxBytes         int64                 `json:"maxBytes,omitempty"`
	FillRatio        float64               `json:"fillRatio"`
	Template         *store.CollectionSpec `json:"template,omitempty"`
	RangeKey         resolver.KeyDef       `json:"rangeKey,omitzero"`
	RangeType        string                `json:"rangeType,omitempty"`
	Ranges           []Bounds              `json:"ranges,omitempty"`
}

// MarshalJSON writes the resolver in its JSON form:
// {"kind":"spillover","partitionKey":"/id","collections":[...],
// "collectionPrefix":"log","maxDocuments":1000000,"fillRatio":0.9}, with
// "maxBytes", "template", "rangeKey", "rangeType" and "ranges" when set.
func (r *Resolver) MarshalJSON() ([]byte, error) {
	s := spec{Kind: Kind, PartitionKey: r.key, Collections: r.colls, CollectionPrefix: r.prefix, MaxDocuments: r.maxDocs,
		MaxBytes: r.maxBytes, FillRatio: r.fill, Template: provision.JSON(r.userTemplate()), RangeKey: r.rangeKey, RangeType: r.rangeType, Ranges: r.rangeList}
	return json.Marshal(s)
}

// decode is the kind's JSON decoder. "maxDocuments" or "maxBytes" present
// as 0, and "fillRatio" present outside (0, 1], are errors naming them.
func decode(data []byte) (resolver.Resolver, error) {
	var s struct {
		Kind             string                `json:"kind"`
		PartitionKey     resolver.KeyDef       `json:"partitionKey"`
		Collections      []string              `json:"collections"`
		CollectionPrefix string                `json:"collectionPrefix"`
		MaxDocuments     *int64                `json:"maxDocuments"`
		MaxBytes         *int64                `json:"maxBytes"`
		FillRatio        *float64              `json:"fillRatio"`
		Template         *store.CollectionSpec `json:"template"`
		RangeKey         resolver.KeyDef       `json:"rangeKey"`
		RangeType        string                `json:"rangeType"`
		Ranges           []Bounds              `json:"ranges"`
	}
	if err := resolver.DecodeStrict(data, &s); err != nil {
		return nil, err
	}
	if s.Kind != Kind {
		return nil, resolver.Invalid("kind", s.Kind, fmt.Sprintf("want %q", Kind))
	}
	o := Options{PartitionKey: s.PartitionKey, CollectionPrefix: s.CollectionPrefix, Template: s.Template,
		RangeKey: s.RangeKey, RangeType: s.RangeType, Ranges: s.Ranges}
	if p := s.MaxDocuments; p != nil {
		if *p <= 0 {
			return nil, resolver.Invalid("maxDocuments", *p, "a collection's limit must be at least 1")
		}
		o.MaxDocuments = *p
	}
	if p := s.MaxBytes; p != nil {
		if *p <= 0 {
			return nil, resolver.Invalid("maxBytes", *p, "a collection's limit must be at least 1 byte")
		}
		o.MaxBytes = *p
	}
	if p := s.FillRatio; p != nil {
		if !(*p > 0 && *p <= 1) {
			return nil, resolver.Invalid("fillRatio", *p, "want a ratio in (0, 1]")
		}
		o.FillRatio = *p
	}
	if s.Collections == nil {
		return nil, resolver.Invalid("collections", nil, "missing: a spillover starts with one collection")
	}
	return New(s.Collections, &o)
}

func init() { resolver.Register(Kind, decode) }

// canonical returns a valid collection link in its canonical form.
func canonical(l string) string {
	c, _ := link.Canonical(l)
	return c
}
