package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
)

// placement is the one place the router decides where a key lives: for a
// registered resolver, where a document is written (ResolveForCreate) and
// where it may be read (ResolveForRead, in the order to look), with the
// route cache behind both. Everything else in the router asks it and
// never calls the resolver itself, so a placement rule (a resolver moving keys, a
// key written to one placement and read from two) is taught here once.
//
// A placement is immutable apart from the cache, whose slots are atomic;
// Register builds a new one for a new resolver.
type placement struct {
	r     resolver.Resolver
	kd    resolver.KeyDef       // zero: the resolver reads no documents itself
	text  resolver.TextResolver // nil: keys are placed as values only
	owner resolver.Owner        // nil: every collection holds only its own documents
	// spread: a key may be in several collections (resolver.Spreader), so
	// a create looks in the others first.
	spread bool
	cache  *routeCache // nil: off
	epoch  int64       // stamped on every write (WriteOptions.Epoch); 0: none
	// stamped is what an unconditional write without a partition key
	// tells the store: nil, or the epoch alone. Shared, never modified.
	stamped *store.WriteOptions
}

// stamp makes every write placed here carry epoch, for a store that is a
// store.Fencer. It is called before the placement is published.
func (pl *placement) stamp(epoch int64) {
	pl.epoch = epoch
	if epoch != 0 {
		pl.stamped = &store.WriteOptions{Epoch: epoch}
	}
}

// writeOptions returns what a create or upsert tells the store.
func (pl *placement) writeOptions(ifMatch string) *store.WriteOptions {
	if ifMatch == "" {
		return pl.stamped
	}
	return &store.WriteOptions{IfMatch: ifMatch, Epoch: pl.epoch}
}

func newPlacement(r resolver.Resolver, cacheSize int) *placement {
	pl := &placement{r: r}
	if kd, ok := r.(resolver.KeyDefiner); ok {
		pl.kd = kd.KeyDef()
	}
	if tr, ok := r.(resolver.TextResolver); ok && !pl.kd.IsZero() {
		pl.text = tr
	}
	if o, ok := r.(resolver.Owner); ok {
		pl.owner = o
	}
	if sp, ok := r.(resolver.Spreader); ok {
		pl.spread = sp.Spreads()
	}
	if cacheSize > 0 {
		pl.cache = newRouteCache(cacheSize)
	}
	return pl
}

// route is where point operations on one key look, and what they tell the
// store. One allocation holds it all, and it is shared by every call on the
// key (through the route cache): nothing in it is modified once made, the
// links are never handed out, and the store only reads the options.
type route struct {
	hash  uint64 // the key's hash in the route cache: a probe for another key stops here
	key   string
	links []string // ResolveForRead: where to look, in order
	// full is a composite key (nil for any other): each collection takes
	// the key Client.keys gives (whole in a hierarchical one). ro and wo
	// hold the key as the store gets it otherwise
	// (partitionkey.CollectionKey).
	full any
	ro   store.ReadOptions
	wo   store.WriteOptions // for unconditional replaces and deletes
}

func newRoute(h uint64, s string, links []string, key any, epoch int64) *route {
	sk := partitionkey.CollectionKey(key)
	rt := &route{hash: h, key: s, links: links, ro: store.ReadOptions{PartitionKey: sk}, wo: store.WriteOptions{PartitionKey: sk, Epoch: epoch}}
	if _, ok := partitionkey.Parts(key); ok {
		rt.full = key
	}
	return rt
}

// writeOptions returns the options of a write on the route's key: the
// shared unconditional ones, or a new conditional one for an ETag.
func (rt *route) writeOptions(ifMatch string) *store.WriteOptions {
	if ifMatch == "" {
		return &rt.wo
	}
	return &store.WriteOptions{PartitionKey: rt.wo.PartitionKey, IfMatch: ifMatch, Epoch: rt.wo.Epoch}
}

var errPointNeedsKey = &resolver.KeyError{Err: resolver.ErrNoPartitionKey, Reason: "a point operation needs the document's partition key"}

// forKey returns the route of a point operation on key; string keys come
// from the route cache.
func (pl *placement) forKey(key any) (*route, error) {
	if key == nil {
		return nil, errPointNeedsKey
	}
	s, isString := key.(string)
	var slot *atomic.Pointer[route]
	var h uint64
	if isString && pl.cache != nil {
		var rt *route
		if rt, h, slot = pl.cache.readRoute(s); rt != nil {
			return rt, nil
		}
	}
	links, err := pl.r.ResolveForRead(key)
	if err != nil {
		return nil, err
	}
	rt := newRoute(h, s, links, key, pl.epoch)
	if slot != nil {
		slot.Store(rt)
	}
	return rt, nil
}

// forRead places the key of a point read: a cached route, or, for a
// string key missed for the first time lately (see routeCache), the links
// alone, placed without allocating a route or caching one (the read then
// costs the store's read and the resolver's placement, nothing more).
func (pl *placement) forRead(key any) (*route, []string, error) {
	s, isString := key.(string)
	if !isString || pl.cache == nil {
		rt, err := pl.forKey(key)
		return rt, nil, err
	}
	rt, h, slot := pl.cache.readRoute(s)
	if rt != nil {
		return rt, nil, nil
	}
	links, err := pl.r.ResolveForRead(key)
	if err != nil {
		return nil, nil, err
	}
	if slot == nil {
		return nil, links, nil
	}
	rt = newRoute(h, s, links, key, pl.epoch)
	slot.Store(rt)
	return rt, nil, nil
}

// place is where a call on one key goes: links, where the key is read,
// in order, and for a write target, the collection it is written to. rt
// is the key's route; it is nil only for a string key placed without one
// (its first miss lately, see routeCache), whose calls take the key itself
// (Client.storeKey); writePlace leaves it nil only where the key is read
// from its target alone.
type place struct {
	rt     *route
	links  []string
	target string
}

// one reports whether the key is read from the one collection it is
// written to: the write's common case, one store call where the document
// stays.
func (w place) one() bool { return len(w.links) == 1 && w.links[0] == w.target }

// writePlace places a write on key: where it is read (ResolveForRead) and
// where it is written (ResolveForCreate; a key frozen by a reshard's
// cutover is an error wrapping resolver.ErrMoving, which guarded waits
// on). A string key is hashed once for both route-cache tables; on its
// first miss lately nothing is allocated or cached (the write costs the
// resolver's two placements), after that its route and create link are
// cached as forKey and createTarget cache them.
func (pl *placement) writePlace(key any) (place, error) {
	s, isString := key.(string)
	if !isString || pl.cache == nil {
		rt, err := pl.forKey(key)
		if err != nil {
			return place{}, err
		}
		target, err := pl.createTarget(key)
		return place{rt: rt, links: rt.links, target: target}, err
	}
	rt, h, slot := pl.cache.readRoute(s)
	var links []string
	if rt != nil {
		links = rt.links
	} else {
		var err error
		if links, err = pl.r.ResolveForRead(key); err != nil {
			return place{}, err
		}
	}
	target, cached := pl.cache.createLinkString(h, s)
	if !cached {
		var err error
		if target, err = pl.r.ResolveForCreate(key); err != nil {
			return place{}, err
		}
	}
	if rt == nil && slot != nil { // the key's second miss: cache it
		rt = newRoute(h, s, links, key, pl.epoch)
		slot.Store(rt)
	}
	if !cached && rt != nil {
		pl.cache.putCreate(h, s, target)
	}
	w := place{rt: rt, links: links, target: target}
	if rt == nil && !w.one() {
		w.rt = newRoute(h, s, links, key, pl.epoch) // for the rare paths, which read through a route
	}
	return w, nil
}

// storeKey returns the partition key the store takes for a call on key,
// placed at p, in collection l: the key itself for a string key placed
// without a route, else as the route's read and write options give it.
func (c *Client) storeKey(ctx context.Context, p place, key any, l string) (any, error) {
	switch {
	case p.rt == nil:
		return partitionkey.CollectionKey(key), nil
	case p.rt.full == nil:
		return p.rt.wo.PartitionKey, nil
	}
	return c.keys.Key(ctx, c.st, l, p.rt.full)
}

// forKeyText is forKey for a string key held as bytes (a key read in place
// from raw JSON), whose route-cache hash is h: a cached route costs no
// allocation.
func (pl *placement) forKeyText(h uint64, text []byte) (*route, error) {
	if rt := pl.cache.readRouteBytes(h, text); rt != nil {
		return rt, nil
	}
	return pl.forKey(string(text))
}

// newDocument finds a document's body and the collection a new document
// with its key goes to (Create, Upsert). Raw JSON under a resolver that
// reads a key path is scanned in place, only as far as the key: a string key
// placed before is found in the route cache, and a key the resolver places
// by its text (resolver.TextResolver) is placed without allocating. Other
// documents are encoded and their key read by the resolver.
func (pl *placement) newDocument(doc any) (target string, body []byte, err error) {
	raw, isRaw := rawDoc(doc)
	if !isRaw || pl.kd.IsZero() {
		body, key, err := pl.document(doc)
		if err != nil {
			return "", nil, err
		}
		target, err = pl.createTarget(key)
		return target, body, err
	}
	var buf [64]byte
	if text, ok := pl.stringKey(raw, buf[:0]); ok {
		target, err = pl.createTargetText(pl.cache.hash(text), text)
		return target, raw, err
	}
	if pl.text != nil {
		if target, ok := pl.textTarget(raw); ok {
			return target, raw, nil
		}
	}
	key, err := pl.kd.ExtractBorrowed(raw)
	if err != nil {
		return "", nil, err
	}
	target, err = pl.r.ResolveForCreate(key)
	return target, raw, err
}

// textTarget places raw JSON by its key's canonical text through the
// resolver's ResolveTextForCreate: one allocation (the text's buffer, which
// escapes through the interface call) where reading the key as a value
// costs its box, and a composite key its parts too. ok is false when the
// key has no canonical text (a boolean, null, a missing key): the caller
// then asks the resolver about the value, which says what is wrong. It is
// its own function so that only this path pays for the escaping buffer.
func (pl *placement) textTarget(raw []byte) (string, bool) {
	var buf [64]byte
	text, err := pl.kd.AppendKey(buf[:0], raw)
	if err != nil {
		return "", false
	}
	target, err := pl.text.ResolveTextForCreate(text)
	return target, err == nil
}

// replacement finds a replacement's body and key, the collection it
// belongs in, and the route of its key. Raw JSON with a string key is
// placed through the route cache, allocating nothing for a key seen
// before.
func (pl *placement) replacement(doc any) (body []byte, key any, target string, rt *route, err error) {
	var buf [64]byte
	if raw, ok := rawDoc(doc); ok {
		if text, ok := pl.stringKey(raw, buf[:0]); ok {
			h := pl.cache.hash(text)
			if target, err = pl.createTargetText(h, text); err != nil {
				return nil, nil, "", nil, err
			}
			if rt, err = pl.forKeyText(h, text); err != nil {
				return nil, nil, "", nil, err
			}
			return raw, rt.ro.PartitionKey, target, rt, nil
		}
	}
	if body, key, err = pl.document(doc); err != nil {
		return nil, nil, "", nil, err
	}
	if target, err = pl.createTarget(key); err != nil {
		return nil, nil, "", nil, err
	}
	if rt, err = pl.forKey(key); err != nil {
		return nil, nil, "", nil, err
	}
	return body, key, target, rt, nil
}

// document encodes doc and reads its key with the resolver. A document
// with its own MarshalJSON is read from that encoding: the key is where
// the document's JSON puts it.
func (pl *placement) document(doc any) (body []byte, key any, err error) {
	if body, err = encode(doc); err != nil {
		return nil, nil, err
	}
	src := doc
	if _, custom := doc.(json.Marshaler); custom {
		src = body
	}
	key, err = pl.r.PartitionKey(src)
	return body, key, err
}

// createTarget is ResolveForCreate(key), through the route cache for
// string keys.
func (pl *placement) createTarget(key any) (string, error) {
	s, ok := key.(string)
	if !ok || pl.cache == nil {
		return pl.r.ResolveForCreate(key)
	}
	h := pl.cache.hashString(s)
	if l, ok := pl.cache.createLinkString(h, s); ok {
		return l, nil
	}
	l, err := pl.r.ResolveForCreate(key)
	if err == nil {
		pl.cache.putCreate(h, s, l)
	}
	return l, err
}

// createTargetText is createTarget for a string key held as bytes, whose
// route-cache hash is h; only a key placed for the first time is copied.
func (pl *placement) createTargetText(h uint64, text []byte) (string, error) {
	if l, ok := pl.cache.createLink(h, text); ok {
		return l, nil
	}
	key := string(text)
	l, err := pl.r.ResolveForCreate(key)
	if err == nil {
		pl.cache.putCreate(h, key, l)
	}
	return l, err
}

// stringKey returns the key of raw JSON when the route cache can place it:
// a string at the resolver's one key path, its text appended to buf. The
// document is scanned in place, only as far as the key.
func (pl *placement) stringKey(raw, buf []byte) ([]byte, bool) {
	if pl.cache == nil || pl.kd.IsZero() || pl.kd.Composite() {
		return nil, false
	}
	var vals [1]resolver.RawValue
	rv, err := pl.kd.ExtractRaw(raw, vals[:0])
	if err != nil || rv[0].Kind() != resolver.ValueString {
		return nil, false
	}
	return rv[0].AppendText(buf), true
}

// carriesKey reports whether the raw JSON document doc carries key, as
// the resolver reads documents: a string key is compared in place with
// the document's (stringKey), allocating nothing; any other is read (by
// the resolver's KeyDef in place, else by the resolver) and compared with
// partitionkey.Equal. got is the key read, for a message, when it is not
// key; err says why the document's key could not be read.
func (pl *placement) carriesKey(doc []byte, key any) (same bool, got any, err error) {
	if ks, ok := key.(string); ok {
		var buf [64]byte
		if text, ok := pl.stringKey(doc, buf[:0]); ok && string(text) == ks {
			return true, nil, nil
		}
	}
	if !pl.kd.IsZero() {
		got, err = pl.kd.ExtractBorrowed(doc)
	} else {
		got, err = pl.r.PartitionKey(json.RawMessage(doc))
	}
	if err == nil {
		same, err = partitionkey.Equal(got, key)
	}
	return same, got, err
}

// forQuery returns the collections a query with this partition key runs on
// (every collection for a nil key) and the store key that scopes its
// documents: nil when the key is not a single value (a rangeresolver.Range
// narrows the collections only). Under a composite key (perLink) the scope
// is the key as given, the whole key or a prefix of it, and each
// collection takes it as Client.keys says; a prefix (fewer values than the
// resolver's paths, or a lone value) runs on every collection, since the
// resolver places by the whole key.
func (pl *placement) forQuery(key any) (links []string, scope any, perLink bool, err error) {
	if pl.kd.Composite() && key != nil {
		scope := key
		parts, ok := partitionkey.Parts(key)
		if !ok || len(parts) < len(pl.kd.Paths()) {
			key = nil // a prefix: every collection
		}
		if ok && len(parts) == 0 {
			scope = nil
		}
		if links, err = pl.r.ResolveForRead(key); err != nil {
			return nil, nil, false, err
		}
		return links, scope, scope != nil, nil
	}
	if links, err = pl.r.ResolveForRead(key); err != nil {
		return nil, nil, false, err
	}
	if key != nil {
		if sk := partitionkey.CollectionKey(key); sk != nil {
			if _, err := partitionkey.IdentityText(sk); err == nil {
				scope = sk
			}
		}
	}
	return links, scope, false, nil
}

// encode turns a document (struct, map, []byte, json.RawMessage) into JSON.
func encode(doc any) ([]byte, error) {
	if raw, ok := rawDoc(doc); ok {
		return raw, nil
	}
	if doc == nil {
		return nil, errors.New("router: the document is nil")
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("router: the document does not encode to JSON: %w", err)
	}
	return b, nil
}

// rawDoc returns doc's bytes when it is raw JSON: []byte,
// json.RawMessage, or a Go string, which the resolvers read as JSON text
// too (so a string is never encoded as a JSON string the store refuses).
func rawDoc(doc any) ([]byte, bool) {
	switch d := doc.(type) {
	case []byte:
		return d, true
	case json.RawMessage:
		return d, true
	case string:
		return []byte(d), true
	}
	return nil, false
}
