package fleetsim

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/docshard/docshard/store"
)

// Partition is a logical partition as Cosmos DB budgets it: a collection
// and a partition-key value. Key is the value's text (fmt.Sprint of it);
// AllKeys for a call over the whole collection (a query or feed without a
// partition key, which Cosmos DB fans out to every physical partition);
// for a call on a database (a fence), Link is the database link and Key
// is empty.
type Partition struct {
	Link string
	Key  string
}

// AllKeys is the Key of a call over every partition-key value of a
// collection.
const AllKeys = "*"

// UnknownKey is the Key of a point call made without its partition-key
// value (the embedded store takes it from the document).
const UnknownKey = "?"

// String returns "link[key]".
func (p Partition) String() string { return p.Link + "[" + p.Key + "]" }

// Usage is what a set of calls made and cost.
type Usage struct {
	// Calls counts the calls by Kind; a query or feed counts one per page.
	Calls [numKinds]int64
	// RUByKind is the charge of the calls of each Kind.
	RUByKind [numKinds]float64
	// Docs counts the documents returned by queries, feeds and change
	// feeds.
	Docs int64
	// Errors counts the calls that failed (charged as well: Cosmos DB
	// charges a refused write or a read of a missing document).
	Errors int64
	// RU is the charge of all the calls.
	RU float64
}

// add adds u to v.
func (v *Usage) add(u *Usage, sign float64) {
	for i := range v.Calls {
		v.Calls[i] += int64(sign) * u.Calls[i]
		v.RUByKind[i] += sign * u.RUByKind[i]
	}
	v.Docs += int64(sign) * u.Docs
	v.Errors += int64(sign) * u.Errors
	v.RU += sign * u.RU
}

// CallsTotal is the number of calls of every kind.
func (v Usage) CallsTotal() int64 {
	var n int64
	for _, c := range v.Calls {
		n += c
	}
	return n
}

// Snapshot is a Counter's tallies at one moment, or (Sub) between two.
type Snapshot struct {
	// ByPartition is the usage of each logical partition called.
	ByPartition map[Partition]Usage
	// ByTag is the usage of the calls made under each tag (WithTag).
	ByTag map[string]Usage
}

// Total is the usage of every partition.
func (s Snapshot) Total() Usage {
	var t Usage
	for _, u := range s.ByPartition {
		t.add(&u, 1)
	}
	return t
}

// Busiest returns the partition charged the most RU, and its usage (the
// zero Partition when none was called). Calls over a whole collection
// (Key AllKeys) are a partition of their own here: Cosmos DB spreads
// their charge over the collection's physical partitions.
func (s Snapshot) Busiest() (Partition, Usage) {
	var best Partition
	var bu Usage
	for _, p := range s.Partitions() {
		if u := s.ByPartition[p]; u.RU > bu.RU {
			best, bu = p, u
		}
	}
	return best, bu
}

// Partitions returns the partitions called, sorted.
func (s Snapshot) Partitions() []Partition {
	out := make([]Partition, 0, len(s.ByPartition))
	for p := range s.ByPartition {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Link != out[j].Link {
			return out[i].Link < out[j].Link
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// Sub returns the usage between before and s (s taken later from the
// same Counter).
func (s Snapshot) Sub(before Snapshot) Snapshot {
	out := Snapshot{ByPartition: map[Partition]Usage{}, ByTag: map[string]Usage{}}
	for p, u := range s.ByPartition {
		b := before.ByPartition[p]
		u.add(&b, -1)
		if u.CallsTotal() != 0 {
			out.ByPartition[p] = u
		}
	}
	for t, u := range s.ByTag {
		b := before.ByTag[t]
		u.add(&b, -1)
		if u.CallsTotal() != 0 {
			out.ByTag[t] = u
		}
	}
	return out
}

// Counter charges the calls made through the stores it wraps. It is safe
// for concurrent use; each call costs a lock and a map lookup.
type Counter struct {
	charges Charges
	mu      sync.Mutex
	parts   map[Partition]*Usage
	tags    map[string]*Usage
}

// NewCounter returns a Counter charging by c; nil means DefaultCharges.
func NewCounter(c *Charges) *Counter {
	ch := DefaultCharges
	if c != nil {
		ch = *c
	}
	return &Counter{charges: ch, parts: map[Partition]*Usage{}, tags: map[string]*Usage{}}
}

// Charges returns the table the Counter charges by.
func (c *Counter) Charges() Charges { return c.charges }

// Snapshot returns the tallies so far.
func (c *Counter) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{ByPartition: make(map[Partition]Usage, len(c.parts)), ByTag: make(map[string]Usage, len(c.tags))}
	for p, u := range c.parts {
		s.ByPartition[p] = *u
	}
	for t, u := range c.tags {
		s.ByTag[t] = *u
	}
	return s
}

type tagKey struct{}

// WithTag returns ctx with a tag: the calls made with it are also tallied
// under the tag (Snapshot.ByTag), so the cost of one operation (a publish,
// a wait) is known apart from the fleet's.
func WithTag(ctx context.Context, tag string) context.Context {
	return context.WithValue(ctx, tagKey{}, tag)
}

// charge tallies one call.
func (c *Counter) charge(ctx context.Context, p Partition, k Kind, ru float64, docs int, err error) {
	tag, _ := ctx.Value(tagKey{}).(string)
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.parts[p]
	if u == nil {
		u = &Usage{}
		c.parts[p] = u
	}
	u.tally(k, ru, docs, err)
	if tag != "" {
		t := c.tags[tag]
		if t == nil {
			t = &Usage{}
			c.tags[tag] = t
		}
		t.tally(k, ru, docs, err)
	}
}

func (v *Usage) tally(k Kind, ru float64, docs int, err error) {
	v.Calls[k]++
	v.RUByKind[k] += ru
	v.RU += ru
	v.Docs += int64(docs)
	if err != nil {
		v.Errors++
	}
}

// keyText is a partition-key value's text in a Partition; nil is
// AllKeys.
func keyText(pk any) string {
	switch v := pk.(type) {
	case nil:
		return AllKeys
	case string:
		return v
	}
	return fmt.Sprint(pk)
}

// Wrap returns st with every call charged to c. The value offers exactly
// the optional capabilities st offers (store.ChangeFeeder, store.Fencer,
// store.Batcher, ...), each charged too: a type assertion for one sees
// through the wrapper, as it does through the retry layer's.
func (c *Counter) Wrap(st store.Store) store.Store {
	return withCapabilities(&Store{inner: st, c: c})
}

// Store is a store charging every call to its Counter (Counter.Wrap
// returns it with the wrapped store's capabilities).
type Store struct {
	inner store.Store
	c     *Counter
}

// Unwrap returns the store s wraps.
func (s *Store) Unwrap() store.Store { return s.inner }

// size is the length of a document's stored text, or of the text sent
// when the call failed.
func size(d *store.Document, sent []byte) int {
	if d != nil {
		return len(d.Body)
	}
	return len(sent)
}

func (s *Store) metadata(ctx context.Context, l string, err error) {
	s.c.charge(ctx, Partition{Link: l}, Metadata, 0, 0, err)
}

// CreateCollection implements store.Collections (charged as Metadata).
func (s *Store) CreateCollection(ctx context.Context, l string, spec *store.CollectionSpec) error {
	err := s.inner.CreateCollection(ctx, l, spec)
	s.metadata(ctx, l, err)
	return err
}

// DeleteCollection implements store.Collections (charged as Metadata).
func (s *Store) DeleteCollection(ctx context.Context, l string) error {
	err := s.inner.DeleteCollection(ctx, l)
	s.metadata(ctx, l, err)
	return err
}

// ListCollections implements store.Collections (charged as Metadata).
func (s *Store) ListCollections(ctx context.Context, dbLink string) ([]string, error) {
	out, err := s.inner.ListCollections(ctx, dbLink)
	s.metadata(ctx, dbLink, err)
	return out, err
}

// CollectionInfo implements store.Collections (charged as Metadata).
func (s *Store) CollectionInfo(ctx context.Context, l string) (*store.CollectionInfo, error) {
	out, err := s.inner.CollectionInfo(ctx, l)
	s.metadata(ctx, l, err)
	return out, err
}

// Create implements store.Documents: a write of the document's size.
func (s *Store) Create(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	d, err := s.inner.Create(ctx, l, doc, opts)
	s.c.charge(ctx, Partition{l, writeKey(opts)}, Create, s.c.charges.WriteRU(size(d, doc)), 0, err)
	return d, err
}

// Read implements store.Documents: a point read of the document's size.
func (s *Store) Read(ctx context.Context, l, id string, opts *store.ReadOptions) (*store.Document, error) {
	d, err := s.inner.Read(ctx, l, id, opts)
	var pk any
	if opts != nil {
		pk = opts.PartitionKey
	}
	s.c.charge(ctx, Partition{l, pointKey(pk)}, PointRead, s.c.charges.ReadRU(size(d, nil)), 0, err)
	return d, err
}

// Replace implements store.Documents: a write of the document's size.
func (s *Store) Replace(ctx context.Context, l, id string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	d, err := s.inner.Replace(ctx, l, id, doc, opts)
	s.c.charge(ctx, Partition{l, writeKey(opts)}, Replace, s.c.charges.WriteRU(size(d, doc)), 0, err)
	return d, err
}

// Upsert implements store.Documents: a write of the document's size.
func (s *Store) Upsert(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	d, err := s.inner.Upsert(ctx, l, doc, opts)
	s.c.charge(ctx, Partition{l, writeKey(opts)}, Upsert, s.c.charges.WriteRU(size(d, doc)), 0, err)
	return d, err
}

// Delete implements store.Documents: a write of 1 KB (the size of the
// document deleted is not known here; small documents cost that).
func (s *Store) Delete(ctx context.Context, l, id string, opts *store.WriteOptions) error {
	err := s.inner.Delete(ctx, l, id, opts)
	s.c.charge(ctx, Partition{l, writeKey(opts)}, Delete, s.c.charges.WriteRU(0), 0, err)
	return err
}

// Query implements store.Querier: a page, plus a point read per document
// returned.
func (s *Store) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	p, err := s.inner.Query(ctx, l, q, opts)
	var pk any
	if opts != nil {
		pk = opts.PartitionKey
	}
	s.page(ctx, Partition{l, keyText(pk)}, Query, p, err)
	return p, err
}

// ReadFeed implements store.Feeder: a page, plus a point read per
// document returned.
func (s *Store) ReadFeed(ctx context.Context, l string, opts *store.FeedOptions) (*store.Page, error) {
	p, err := s.inner.ReadFeed(ctx, l, opts)
	s.page(ctx, Partition{l, AllKeys}, ReadFeed, p, err)
	return p, err
}

func (s *Store) page(ctx context.Context, part Partition, k Kind, p *store.Page, err error) {
	var sizes []int
	if p != nil {
		sizes = make([]int, len(p.Items))
		for i, it := range p.Items {
			sizes[i] = len(it)
		}
	}
	s.c.charge(ctx, part, k, s.c.charges.PageRU(k, sizes), len(sizes), err)
}

// Close closes the wrapped store.
func (s *Store) Close() error { return s.inner.Close() }

// pointKey is the Key of a point call on the partition-key value pk.
func pointKey(pk any) string {
	if pk == nil {
		return UnknownKey
	}
	return keyText(pk)
}

func writeKey(opts *store.WriteOptions) string {
	if opts == nil {
		return UnknownKey
	}
	return pointKey(opts.PartitionKey)
}
