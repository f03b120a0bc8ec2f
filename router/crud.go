package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
)

// WriteOptions qualify a create, upsert or delete. A nil *WriteOptions
// means none.
type WriteOptions struct {
	// IfMatch makes the write conditional on the stored document's ETag.
	IfMatch string
}

// ReplaceOptions qualify a replace. A nil *ReplaceOptions means none.
type ReplaceOptions struct {
	// IfMatch makes the replace conditional on the stored document's ETag.
	IfMatch string
	// OldKey is the partition key the stored document has now, when the
	// replacement changes it; nil means the key is unchanged. The router
	// cannot learn it from the new document, and reading every collection
	// to find the id would cost a query per collection, so the caller (who
	// read the document it is changing) says it.
	OldKey any
}

// MoveError reports a Replace that changed a document's key and failed
// part-way through moving it. Duplicate tells whether both copies exist:
// the new one at To and the old one at From (which Delete(id, old key)
// resolves); otherwise nothing was changed.
type MoveError struct {
	ID        string
	From, To  string // the old and the new collection
	Duplicate bool
	Err       error
}

// Error implements error.
func (e *MoveError) Error() string {
	if e.Duplicate {
		return fmt.Sprintf("router: moving %q from %s to %s: the new copy is written but the old one could not be deleted, so the document exists twice (delete it by its old key): %v", e.ID, e.From, e.To, e.Err)
	}
	return fmt.Sprintf("router: moving %q from %s to %s: nothing changed: %v", e.ID, e.From, e.To, e.Err)
}

// Unwrap returns the cause.
func (e *MoveError) Unwrap() error { return e.Err }

// Create stores a new document in the collection its key resolves to. The
// document is a struct, a map or raw JSON ([]byte, json.RawMessage, or a
// Go string holding JSON text, as the resolvers read it); it
// must have a string "id" and the resolver's partition key (else an error
// wrapping resolver.ErrNoPartitionKey, and nothing is written). The store
// reads the key from the body, where the resolver just read it. An
// existing id is an error wrapping store.ErrConflict.
//
// Cost over the store's own Create: finding the resolver, reading the key
// (raw JSON is scanned only as far as the key) and placing it (a hash for
// a ring; nothing for a key placed before, see Options.RouteCacheSize);
// structs and maps also pay json.Marshal.
func (c *Client) Create(ctx context.Context, dbLink string, doc any, opts *WriteOptions) (*store.Document, error) {
	return c.write(ctx, "create", dbLink, doc, opts)
}

// Upsert creates the document or replaces the one with its id and key, in
// the collection its key resolves to. Like Create, it writes one
// collection: a document whose key changed needs Replace with OldKey, or
// the old copy stays where it was.
func (c *Client) Upsert(ctx context.Context, dbLink string, doc any, opts *WriteOptions) (*store.Document, error) {
	return c.write(ctx, "upsert", dbLink, doc, opts)
}

func (c *Client) write(ctx context.Context, op, dbLink string, doc any, opts *WriteOptions) (*store.Document, error) {
	return guarded(c, ctx, dbLink, func(ctx context.Context, e *dbEntry) (*store.Document, error) {
		target, body, err := e.pl.newDocument(doc)
		if err != nil {
			return nil, err
		}
		var wo *store.WriteOptions
		if opts != nil {
			wo = e.pl.writeOptions(opts.IfMatch)
		} else {
			wo = e.pl.stamped
		}
		if op == "create" {
			if e.pl.spread {
				if err := c.notElsewhere(ctx, e, target, body); err != nil {
					return nil, err
				}
			}
			return c.st.Create(ctx, target, body, wo)
		}
		return c.st.Upsert(ctx, target, body, wo)
	})
}

// notElsewhere is a create's conflict check beyond the store's, for a
// resolver whose key spreads over collections (resolver.Spreader): the id
// read, under its key, in each collection the key is read from other than
// target; found is a *store.Error wrapping store.ErrConflict naming where.
// Cost: a point read per other collection. Two creates of one id racing
// with the opening of a spillover's next collection can still both land
// (one in each newest); sequential creates, a reload of a file among them,
// cannot.
func (c *Client) notElsewhere(ctx context.Context, e *dbEntry, target string, body []byte) error {
	key, err := e.pl.r.PartitionKey(json.RawMessage(body))
	if err != nil {
		return err
	}
	links, err := e.pl.r.ResolveForRead(key)
	if err != nil {
		return err
	}
	others := make([]string, 0, len(links))
	for _, l := range links {
		if l != target {
			others = append(others, l)
		}
	}
	if len(others) == 0 {
		return nil
	}
	id := gjson.GetBytes(body, "id").String()
	l, _, err := c.findIn(ctx, others, id, nil, newRoute(0, "", others, key, 0))
	switch {
	case err == nil:
		return &store.Error{Kind: store.ErrConflict, Op: "create", Link: l, ID: id, Status: 409,
			Message: "the id is stored in " + l + " already (the key is read from several collections; Upsert or Replace changes it there)"}
	case errors.Is(err, store.ErrNotFound):
		return nil
	}
	return err
}

// find returns the collection holding id under the route and the document:
// the first of the route's collections that has it. Errors other than "not
// found" end the search.
func (c *Client) find(ctx context.Context, rt *route, id string) (string, *store.Document, error) {
	if rt.full == nil {
		return c.findIn(ctx, rt.links, id, &rt.ro, nil)
	}
	return c.findIn(ctx, rt.links, id, nil, rt)
}

// findIn is find over links with the read options ro, or, when composite
// is set, those of composite's key in each collection (readOptions).
func (c *Client) findIn(ctx context.Context, links []string, id string, ro *store.ReadOptions, composite *route) (string, *store.Document, error) {
	var last error
	for _, l := range links {
		if composite != nil {
			var err error
			if ro, err = c.readOptions(ctx, composite, l); err != nil {
				return "", nil, err
			}
		}
		d, err := c.st.Read(ctx, l, id, ro)
		if err == nil {
			return l, d, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", nil, err
		}
		last = err
	}
	if last == nil {
		last = &store.Error{Kind: store.ErrNotFound, Op: "read", ID: id, Message: "the resolver names no collection for this key"}
	}
	return "", nil, last
}

// Read returns the document with this id and partition key from the first
// collection ResolveForRead names that has it (for a resolver moving keys: the
// next placement, then the current one). A missing key is an error
// wrapping resolver.ErrNoPartitionKey; a missing document, store.ErrNotFound;
// a followed database whose router's lease lapsed, a *LeaseError (see
// ErrLeaseExpired).
//
// Cost over the store's own Read: finding the resolver and placing the key
// (nothing for a string key read twice lately, see Options.RouteCacheSize;
// the resolver's placement and the read options, one allocation, for a
// string key read once).
func (c *Client) Read(ctx context.Context, dbLink, id string, key any) (*store.Document, error) {
	// entry, its first case written out: the hottest call saves a call.
	reg := c.dbs.Load()
	e := reg.only
	if e == nil || e.link != dbLink {
		var err error
		if e, err = c.findEntry(reg, dbLink); err != nil {
			return nil, err
		}
	}
	if e.follow != nil {
		var err error
		if ctx, e, err = c.beginRead(ctx, e); err != nil {
			return nil, err
		}
		defer e.inflight.Add(-1)
	}
	rt, links, err := e.pl.forRead(key)
	if err != nil {
		return nil, err
	}
	if rt == nil {
		_, d, err := c.findIn(ctx, links, id, &store.ReadOptions{PartitionKey: partitionkey.CollectionKey(key)}, nil)
		return d, err
	}
	if len(rt.links) == 1 && rt.full == nil {
		// The common case, one place to look: findIn's loop would return
		// the store's answer as it is.
		return c.st.Read(ctx, rt.links[0], id, &rt.ro)
	}
	_, d, err := c.find(ctx, rt, id)
	return d, err
}

// Replace overwrites the document with this id with doc (whose "id" must
// be id). Give opts.OldKey when doc's partition key differs from the
// stored document's.
//
// When the key and the collection stay the same it is one conditional
// store Replace (If-Match: opts.IfMatch). Otherwise the document moves: the
// stored copy is read (its ETag checked against opts.IfMatch), the new
// version is created where it now belongs, then the old copy is deleted on
// condition of the ETag just read. The order means a crash or failure
// leaves at worst both copies (a *MoveError with Duplicate set, or a
// duplicate a query would see), never neither. If the old copy
// changed or vanished meanwhile, the new one is removed again and Replace
// fails with nothing changed.
func (c *Client) Replace(ctx context.Context, dbLink, id string, doc any, opts *ReplaceOptions) (*store.Document, error) {
	o := opt.Of(opts)
	return guarded(c, ctx, dbLink, func(ctx context.Context, e *dbEntry) (*store.Document, error) {
		return c.replace(ctx, e, id, doc, o)
	})
}

func (c *Client) replace(ctx context.Context, e *dbEntry, id string, doc any, o ReplaceOptions) (*store.Document, error) {
	body, key, target, newRt, err := e.pl.replacement(doc)
	if err != nil {
		return nil, err
	}
	if err := checkID(body, id); err != nil {
		return nil, err
	}
	oldKey, sameKey := key, true
	if o.OldKey != nil {
		oldKey = o.OldKey
		if sameKey, err = partitionkey.Equal(key, oldKey); err != nil {
			return nil, err
		}
	}
	if sameKey && len(newRt.links) == 1 && newRt.links[0] == target {
		// The common case: one place to look, and it is where the
		// document stays.
		wo, err := c.writeOptions(ctx, newRt, target, o.IfMatch)
		if err != nil {
			return nil, err
		}
		d, err := c.st.Replace(ctx, target, id, body, wo)
		return d, oldKeyHint(err, o)
	}
	oldRt := newRt
	if !sameKey {
		if oldRt, err = e.pl.forKey(oldKey); err != nil {
			return nil, err
		}
	}
	source, old, err := c.find(ctx, oldRt, id)
	if err != nil {
		return nil, oldKeyHint(err, o)
	}
	if o.IfMatch != "" && o.IfMatch != old.ETag {
		return nil, &store.Error{Kind: store.ErrPreconditionFailed, Op: "replace", Link: source, ID: id, Message: fmt.Sprintf("If-Match %s, stored ETag %s", o.IfMatch, old.ETag)}
	}
	newWo, err := c.writeOptions(ctx, newRt, target, old.ETag)
	if err != nil {
		return nil, err
	}
	oldSk := oldRt.ro.PartitionKey
	if oldRt.full != nil {
		if oldSk, err = c.keys.Key(ctx, c.st, source, oldRt.full); err != nil {
			return nil, err
		}
	}
	samePartition, err := partitionkey.Equal(newWo.PartitionKey, oldSk)
	if err != nil {
		return nil, err
	}
	if source == target && samePartition {
		// Same collection and logical partition (a composite key may
		// change in a part a collection partitioned by its first path
		// is not partitioned by).
		return c.st.Replace(ctx, target, id, body, newWo)
	}
	return c.move(ctx, id, body, source, target, newRt, oldRt, old.ETag)
}

// readOptions returns the read options of rt's key in collection l: the
// route's own, or for a composite key those of the key collection l takes
// (Client.keys: the whole key in a hierarchical collection).
func (c *Client) readOptions(ctx context.Context, rt *route, l string) (*store.ReadOptions, error) {
	if rt.full == nil {
		return &rt.ro, nil
	}
	sk, err := c.keys.Key(ctx, c.st, l, rt.full)
	if err != nil {
		return nil, err
	}
	return &store.ReadOptions{PartitionKey: sk}, nil
}

// writeOptions returns the options of a write on rt's key in collection l,
// on condition of ifMatch when set; see readOptions.
func (c *Client) writeOptions(ctx context.Context, rt *route, l, ifMatch string) (*store.WriteOptions, error) {
	if rt.full == nil {
		return rt.writeOptions(ifMatch), nil
	}
	sk, err := c.keys.Key(ctx, c.st, l, rt.full)
	if err != nil {
		return nil, err
	}
	return &store.WriteOptions{PartitionKey: sk, IfMatch: ifMatch, Epoch: rt.wo.Epoch}, nil
}

// oldKeyHint explains a replace that found nothing under the new key.
func oldKeyHint(err error, o ReplaceOptions) error {
	if err != nil && o.OldKey == nil && errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w (if the replacement changes the document's partition key, give the old one as ReplaceOptions.OldKey)", err)
	}
	return err
}

// idPath reads a document's "id" in place.
var idPath = resolver.MustKeyDef("/id")

// checkID verifies that the replacement's "id" is the id replaced. The
// body is scanned in place, as far as the id; nothing is allocated unless
// it is wrong.
func checkID(body []byte, id string) error {
	var vals [1]resolver.RawValue
	var buf [64]byte
	if rv, err := idPath.ExtractRaw(body, vals[:0]); err == nil && rv[0].Kind() == resolver.ValueString && string(rv[0].AppendText(buf[:0])) == id {
		return nil
	}
	got := "missing"
	if rv, err := idPath.ExtractRaw(body, vals[:0]); err == nil {
		got = string(rv[0].JSON())
	}
	return &store.Error{Kind: store.ErrBadRequest, Op: "replace", ID: id, Message: fmt.Sprintf("the document's \"id\" (%s) must equal the id replaced", got)}
}

// move creates the new version at target, then deletes the old one at
// source on condition of its ETag; see Replace.
func (c *Client) move(ctx context.Context, id string, body []byte, source, target string, newRt, oldRt *route, oldETag string) (*store.Document, error) {
	wo, err := c.writeOptions(ctx, newRt, target, "")
	if err != nil {
		return nil, &MoveError{ID: id, From: source, To: target, Err: err}
	}
	out, err := c.st.Create(ctx, target, body, wo)
	if err != nil {
		return nil, &MoveError{ID: id, From: source, To: target, Err: err}
	}
	if wo, err = c.writeOptions(ctx, oldRt, source, oldETag); err == nil {
		err = c.st.Delete(ctx, source, id, wo)
	}
	if err == nil {
		return out, nil
	}
	if !errors.Is(err, store.ErrPreconditionFailed) && !errors.Is(err, store.ErrNotFound) {
		// The delete's outcome is unknown (it may have happened): removing
		// the new copy could lose the document, so both stay.
		return nil, &MoveError{ID: id, From: source, To: target, Duplicate: true, Err: err}
	}
	// The old copy changed or vanished under us: a concurrent writer won.
	// Remove our copy (only if nobody touched it) so theirs stands alone.
	wo, undo := c.writeOptions(ctx, newRt, target, out.ETag)
	if undo == nil {
		undo = c.st.Delete(ctx, target, id, wo)
	}
	if undo != nil {
		return nil, &MoveError{ID: id, From: source, To: target, Duplicate: true, Err: fmt.Errorf("%w; then removing the new copy failed: %v", err, undo)}
	}
	return nil, &MoveError{ID: id, From: source, To: target, Err: err}
}

// Delete removes the document with this id and key from every collection
// ResolveForRead names (a resolver moving keys may name two, and a document
// sit in both), or, for a resolver that is a resolver.Owner (a transition),
// from every collection that may hold the key (Holders). opts.IfMatch
// applies to the first copy found, or to the owner's. It is an error wrapping
// store.ErrNotFound when no collection has it.
//
// A delete is idempotent across the router's own reruns: when a new state
// refuses one of its calls as fenced (or moves the key) after an earlier
// call of the same Delete removed a copy, the router deletes again by the
// new state, and finding nothing left then is the success it is, not
// NotFound.
func (c *Client) Delete(ctx context.Context, dbLink, id string, key any, opts *WriteOptions) error {
	deleted := false // a copy was removed by an earlier attempt of this call
	_, err := guarded(c, ctx, dbLink, func(ctx context.Context, e *dbEntry) (none, error) {
		return none{}, c.delete(ctx, e, id, key, opts, &deleted)
	})
	return err
}

// delete removes the copies of id by e's placement, setting *earlier when it
// removes one; finding none is success when *earlier is set (a rerun after
// a fenced or interrupted attempt that removed one).
func (c *Client) delete(ctx context.Context, e *dbEntry, id string, key any, opts *WriteOptions, earlier *bool) error {
	rt, err := e.pl.forKey(key)
	if err != nil {
		return err
	}
	ifMatch := ""
	if opts != nil {
		ifMatch = opts.IfMatch
	}
	links, holders := rt.links, false
	if e.pl.owner != nil {
		// A key that may sit in two placements (a transition) is deleted
		// from both, so no copy of it is left to reappear; the owner's
		// copy is the one If-Match applies to.
		if links, err = e.pl.owner.Holders(key); err != nil {
			return err
		}
		holders = true
	}
	deleted := false
	var last error
	for i, l := range links {
		cond := ""
		if !*earlier && ((!holders && !deleted) || (holders && i == 0)) {
			// If-Match applies once: an earlier attempt that removed a
			// copy applied it already.
			cond = ifMatch
		}
		wo, err := c.writeOptions(ctx, rt, l, cond)
		if err != nil {
			return err
		}
		err = c.st.Delete(ctx, l, id, wo)
		switch {
		case err == nil:
			deleted, *earlier = true, true
		case errors.Is(err, store.ErrNotFound):
			last = err
		default:
			return err
		}
	}
	if !deleted && !*earlier {
		if last == nil {
			last = &store.Error{Kind: store.ErrNotFound, Op: "delete", ID: id, Message: "the resolver names no collection for this key"}
		}
		return last
	}
	return nil
}

// EnsureCollections makes every collection the database's resolver wants
// exist, through store.EnsureCollections (the one conflict rule), and
// returns the links it created, in the resolver's order. What the resolver
// wants is WantedCollections': a resolver.Provisioner's own collections and
// template (managed, spillover), else every collection ResolveForRead(nil)
// names, from the template spec (nil: defaults, partitioned by the
// resolver's partition-key path, or hierarchical by all the paths of a
// composite key; TTL and indexing policy as given; a resolver without a
// KeyDef method needs the path in the template). Like the .NET SDK's
// managed resolver, it makes a new configuration usable in one call.
//
// A template partitioned by another path than the resolver's key, or an
// existing collection that is, is a *store.KeyPathError (wrapping
// ErrKeyPathMismatch): keyed reads through the router would miss its
// documents. A spillover's sealed collection that is missing is a
// *store.MissingCollectionError. It runs up to 8 creations at once; on an
// error the collections created so far stay and are returned, and calling
// it again finishes the job.
func (c *Client) EnsureCollections(ctx context.Context, dbLink string, spec *store.CollectionSpec) ([]string, error) {
	e, err := c.entry(dbLink)
	if err != nil {
		return nil, err
	}
	w, err := WantedCollections(dbLink, e.pl.r, spec)
	if err != nil {
		return nil, err
	}
	created, err := store.EnsureCollections(retry.Repeatable(ctx), c.st, w)
	if err != nil {
		err = fmt.Errorf("router: %s: %w", dbLink, err)
	}
	return created, err
}

// WantedCollections returns what EnsureCollections makes exist for
// resolver r of database dbLink and template spec (nil: defaults): for a
// resolver.Provisioner, its Provision (its collections, its template and
// key path; spec's TTL and indexing policy are not used, but a spec
// partitioned by another path than the Provision's is still refused); else every
// collection r.ResolveForRead(nil) names, from spec, partitioned by r's
// partition-key path (a resolver that is no resolver.KeyDefiner, or has
// an empty one, needs the path in spec). A resolver whose key has several
// paths (2 or 3, as a hierarchical key has; more keep the first path
// alone) gets hierarchical collections (spec.PartitionKeyPaths: its
// paths), or, when spec names its first path alone (PartitionKeyPath),
// collections partitioned by that path, as before hierarchical ones; an
// existing collection may be either (Wanted.Accept), and the router hands
// each the key it takes. A spec partitioned by another path than r's is a
// *store.KeyPathError with no collection (the template's). The transition manager uses it for
// the next resolver's collections. Cost: ResolveForRead(nil) or
// Provision, and a path parse.
func WantedCollections(dbLink string, r resolver.Resolver, spec *store.CollectionSpec) (store.Wanted, error) {
	var w store.Wanted
	if spec != nil {
		w.Spec = *spec
	}
	var path string
	if p, ok := r.(resolver.Provisioner); ok {
		pv := p.Provision()
		w.Create, w.Keep, w.KeepReason, path = pv.Create, pv.Keep, pv.KeepReason, pv.KeyPath
		if len(pv.Template) > 0 {
			var t store.CollectionSpec
			if err := json.Unmarshal(pv.Template, &t); err != nil {
				return w, fmt.Errorf("router: the template of %s's resolver: %w", dbLink, err)
			}
			w.Spec.DefaultTTL, w.Spec.Indexing = t.DefaultTTL, t.Indexing
		}
		if path == "" {
			path = "/id"
		}
	} else {
		links, err := r.ResolveForRead(nil)
		if err != nil {
			return w, err
		}
		w.Create = links
		if kd, ok := r.(resolver.KeyDefiner); ok && !kd.KeyDef().IsZero() {
			paths := kd.KeyDef().Paths()
			path = paths[0]
			if len(paths) > 1 && len(paths) <= partitionkey.MaxPaths {
				return wantedHierarchical(dbLink, w, paths)
			}
		}
	}
	switch {
	case path == "" && w.Spec.PartitionKeyPath == "":
		return w, fmt.Errorf("router: the resolver of %s reads no documents itself (it is no resolver.KeyDefiner, or its partitionKey is empty): give the path the collections are partitioned by in the template", dbLink)
	case path == "":
		path = w.Spec.PartitionKeyPath
	}
	if _, err := resolver.ParsePath(path); err != nil {
		return w, fmt.Errorf("router: the resolver's partition key %s: %w", path, err)
	}
	if sp := w.Spec.PartitionKeyPath; sp != "" {
		same, err := store.SameKeyPath(sp, path)
		if err != nil {
			return w, fmt.Errorf("router: the template's partition-key path: %w", err)
		}
		if !same {
			return w, fmt.Errorf("router: the template of %s: %w", dbLink, &store.KeyPathError{Want: path, Found: sp})
		}
	}
	w.Spec.PartitionKeyPath = path
	return w, nil
}

// wantedHierarchical finishes WantedCollections for a resolver whose key
// has several paths: its collections are hierarchical (PartitionKeyPaths),
// unless the template names its first path alone (PartitionKeyPath), which
// creates collections partitioned by the first path as before; an
// existing collection may be either (Wanted.Accept).
func wantedHierarchical(dbLink string, w store.Wanted, paths []string) (store.Wanted, error) {
	first := []string{paths[0]}
	want := w.Spec.KeyPaths()
	switch {
	case w.Spec.PartitionKeyPath == "" && len(w.Spec.PartitionKeyPaths) == 0:
		w.Spec.PartitionKeyPaths, want = slices.Clone(paths), paths
	case len(w.Spec.PartitionKeyPaths) > 1:
		w.Spec.PartitionKeyPath = ""
	}
	sameAll, err := store.SameKeyPaths(want, paths)
	if err != nil {
		return w, fmt.Errorf("router: the template's partition-key path: %w", err)
	}
	sameFirst, err := store.SameKeyPaths(want, first)
	if err != nil {
		return w, fmt.Errorf("router: the template's partition-key path: %w", err)
	}
	switch {
	case sameAll:
		w.Accept = first
	case sameFirst:
		w.Spec.PartitionKeyPath, w.Spec.PartitionKeyPaths, w.Accept = paths[0], nil, slices.Clone(paths)
	default:
		return w, fmt.Errorf("router: the template of %s: %w", dbLink, &store.KeyPathError{Want: strings.Join(paths, ", ") + " (or " + paths[0] + ")", Found: strings.Join(want, ", ")})
	}
	return w, nil
}
