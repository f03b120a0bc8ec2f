package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
)

// WriteOptions qualify a write. A nil *WriteOptions means none.
type WriteOptions struct {
	// IfMatch makes the write conditional on the stored document's ETag.
	IfMatch string
}

// ReplaceOptions qualify a replace. A nil *ReplaceOptions means none.
type ReplaceOptions struct {
	// IfMatch makes the replace conditional on the stored document's ETag.
	IfMatch string
	// OldKey is the partition key the stored document has now, when the
	// replacement changes it; nil means the key is unchanged.
	OldKey any
}

// encode turns a document (struct, map, []byte, json.RawMessage) into JSON.
func encode(doc any) ([]byte, error) {
	switch d := doc.(type) {
	case []byte:
		return d, nil
	case json.RawMessage:
		return d, nil
	case nil:
		return nil, fmt.Errorf("router: the document is nil")
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("router: the document does not encode to JSON: %w", err)
	}
	return b, nil
}

// storeKey is the partition-key value passed to the store: collections are
// partitioned by the resolver's partition-key path (the first path of a
// composite key), which is how EnsureCollections creates them.
func storeKey(key any) any {
	switch k := key.(type) {
	case resolver.CompositeKey:
		if len(k) > 0 {
			return storeKey(k[0])
		}
		return nil
	case []any:
		if len(k) > 0 {
			return storeKey(k[0])
		}
		return nil
	}
	if key == resolver.Null {
		return store.Null
	}
	return key
}

// place finds the document's key and the collection it goes to.
func (c *Client) place(dbLink string, doc any) (r resolver.Resolver, body []byte, key any, target string, err error) {
	if r, err = c.Resolver(dbLink); err != nil {
		return
	}
	if body, err = encode(doc); err != nil {
		return
	}
	src := doc
	if _, isStruct := doc.(json.Marshaler); isStruct {
		src = body
	}
	if key, err = r.PartitionKey(src); err != nil {
		return
	}
	target, err = r.ResolveForCreate(key)
	return
}

// placeNew finds where a new document goes. For raw JSON and a resolver
// that reads documents by a key path, the key is read without copying it
// (it is used here and dropped); an error is reported with a key of its
// own, since errors outlive the call.
func (c *Client) placeNew(dbLink string, doc any) (string, []byte, error) {
	r, err := c.Resolver(dbLink)
	if err != nil {
		return "", nil, err
	}
	raw, isRaw := doc.([]byte)
	if rm, ok := doc.(json.RawMessage); ok {
		raw, isRaw = rm, true
	}
	kd, ok := r.(keyDefiner)
	if !isRaw || !ok {
		_, body, _, target, err := c.place(dbLink, doc)
		return target, body, err
	}
	key, err := kd.KeyDef().ExtractBorrowed(raw)
	if err == nil {
		var target string
		if target, err = r.ResolveForCreate(key); err == nil {
			return target, raw, nil
		}
	}
	_, body, _, target, err := c.place(dbLink, doc)
	return target, body, err
}

// Create stores a new document in the collection its key resolves to. The
// document is a struct, a map or JSON; it must have a string "id".
func (c *Client) Create(ctx context.Context, dbLink string, doc any, opts *WriteOptions) (*store.Document, error) {
	return c.write(ctx, "create", dbLink, doc, opts)
}

// Upsert creates the document or replaces the one with its id, in the
// collection its key resolves to.
func (c *Client) Upsert(ctx context.Context, dbLink string, doc any, opts *WriteOptions) (*store.Document, error) {
	return c.write(ctx, "upsert", dbLink, doc, opts)
}

func (c *Client) write(ctx context.Context, op, dbLink string, doc any, opts *WriteOptions) (*store.Document, error) {
	target, body, err := c.placeNew(dbLink, doc)
	if err != nil {
		return nil, err
	}
	// The store reads the partition-key value from the body, which the
	// resolver just read the key from: passing it again would only cost.
	var wo *store.WriteOptions
	if opts != nil && opts.IfMatch != "" {
		wo = &store.WriteOptions{IfMatch: opts.IfMatch}
	}
	var r retrier
	for {
		start := r.begin(c)
		var out *store.Document
		if op == "create" {
			out, err = c.st.Create(ctx, target, body, wo)
		} else {
			out, err = c.st.Upsert(ctx, target, body, wo)
		}
		if !r.again(ctx, c, target, op, start, &err) {
			return out, err
		}
	}
}

// find returns the collection holding (id, key) and the document: the
// first of ResolveForRead(key) that has it.
func (c *Client) find(ctx context.Context, r resolver.Resolver, id string, key any) (string, *store.Document, error) {
	if key == nil {
		return "", nil, &resolver.KeyError{Err: resolver.ErrNoPartitionKey, Reason: "a point operation needs the document's partition key"}
	}
	links, err := r.ResolveForRead(key)
	if err != nil {
		return "", nil, err
	}
	ro := &store.ReadOptions{PartitionKey: storeKey(key)}
	var last error
	for _, l := range links {
		var r retrier
		var d *store.Document
		for {
			start := r.begin(c)
			d, err = c.st.Read(ctx, l, id, ro)
			if !r.again(ctx, c, l, "read", start, &err) {
				break
			}
		}
		if err == nil {
			return l, d, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", nil, err
		}
		last = err
	}
	if last == nil {
		last = &store.Error{Kind: store.ErrNotFound, Op: "read", ID: id, Message: "no collection may hold this key"}
	}
	return "", nil, last
}

// Read returns the document with this id and partition key, from whichever
// collection the resolver says may hold it.
func (c *Client) Read(ctx context.Context, dbLink, id string, key any) (*store.Document, error) {
	r, err := c.Resolver(dbLink)
	if err != nil {
		return nil, err
	}
	_, d, err := c.find(ctx, r, id, key)
	return d, err
}

// Replace overwrites the document with doc's id. When doc's partition key
// differs from the stored one (give it as opts.OldKey), or the resolver now
// places the key elsewhere, the document moves: it is created where it now
// belongs, then deleted where it was (the delete conditional on the ETag
// read before), so a failure in between leaves at worst a duplicate that
// `docshard verify` reports, never a lost document.
func (c *Client) Replace(ctx context.Context, dbLink, id string, doc any, opts *ReplaceOptions) (*store.Document, error) {
	var o ReplaceOptions
	if opts != nil {
		o = *opts
	}
	r, body, key, target, err := c.place(dbLink, doc)
	if err != nil {
		return nil, err
	}
	var bodyID struct {
		ID *string `json:"id"`
	}
	if json.Unmarshal(body, &bodyID) != nil || bodyID.ID == nil || *bodyID.ID != id {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: "replace", ID: id, Message: "the document's \"id\" must equal the id replaced"}
	}
	oldKey := key
	if o.OldKey != nil {
		oldKey = o.OldKey
	}
	source, old, err := c.find(ctx, r, id, oldKey)
	if err != nil {
		return nil, err
	}
	if o.IfMatch != "" && o.IfMatch != old.ETag {
		return nil, &store.Error{Kind: store.ErrPreconditionFailed, Op: "replace", Link: source, ID: id, Message: fmt.Sprintf("If-Match %s, stored ETag %s", o.IfMatch, old.ETag)}
	}
	sameKey, err := equalKeys(storeKey(key), storeKey(oldKey))
	if err != nil {
		return nil, err
	}
	if source == target && sameKey {
		var out *store.Document
		err := c.call(ctx, target, "replace", func() (err error) {
			out, err = c.st.Replace(ctx, target, id, body, &store.WriteOptions{PartitionKey: storeKey(key), IfMatch: old.ETag})
			return err
		})
		return out, err
	}
	// Move: create at the target first, then delete the source.
	var out *store.Document
	err = c.call(ctx, target, "create", func() (err error) {
		out, err = c.st.Create(ctx, target, body, &store.WriteOptions{PartitionKey: storeKey(key)})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("router: moving %q to %s: %w", id, target, err)
	}
	err = c.call(ctx, source, "delete", func() error {
		return c.st.Delete(ctx, source, id, &store.WriteOptions{PartitionKey: storeKey(oldKey), IfMatch: old.ETag})
	})
	if err != nil {
		// The source changed (or vanished) under us: undo the copy so the
		// concurrent writer's version stands alone.
		_ = c.call(ctx, target, "delete", func() error {
			return c.st.Delete(ctx, target, id, &store.WriteOptions{PartitionKey: storeKey(key), IfMatch: out.ETag})
		})
		return nil, fmt.Errorf("router: moving %q from %s: %w", id, source, err)
	}
	return out, nil
}

func equalKeys(a, b any) (bool, error) {
	ta, err := store.KeyText(a)
	if err != nil {
		return false, err
	}
	tb, err := store.KeyText(b)
	if err != nil {
		return false, err
	}
	return ta == tb, nil
}

// Delete removes the document with this id and key from every collection
// the resolver says may hold it (during a transition a document can be in
// two). opts.IfMatch applies to the first copy found. It is an error
// wrapping store.ErrNotFound when no collection has it.
func (c *Client) Delete(ctx context.Context, dbLink, id string, key any, opts *WriteOptions) error {
	r, err := c.Resolver(dbLink)
	if err != nil {
		return err
	}
	if key == nil {
		return &resolver.KeyError{Err: resolver.ErrNoPartitionKey, Reason: "a point operation needs the document's partition key"}
	}
	links, err := r.ResolveForRead(key)
	if err != nil {
		return err
	}
	ifMatch := ""
	if opts != nil {
		ifMatch = opts.IfMatch
	}
	deleted := false
	var last error
	for _, l := range links {
		wo := &store.WriteOptions{PartitionKey: storeKey(key)}
		if !deleted {
			wo.IfMatch = ifMatch
		}
		err := c.call(ctx, l, "delete", func() error { return c.st.Delete(ctx, l, id, wo) })
		switch {
		case err == nil:
			deleted = true
		case errors.Is(err, store.ErrNotFound):
			last = err
		default:
			return err
		}
	}
	if !deleted {
		if last == nil {
			last = &store.Error{Kind: store.ErrNotFound, Op: "delete", ID: id}
		}
		return last
	}
	return nil
}

// keyDefiner is implemented by resolvers that read documents by a
// partition-key path (hash, range, lookup).
type keyDefiner interface {
	KeyDef() resolver.KeyDef
}

// EnsureCollections creates every collection the database's resolver names
// that does not exist yet, from the template spec (nil: partitioned by the
// resolver's partition-key path, the first path of a composite key). It
// returns the links it created. Like the .NET SDK's managed resolver, it
// makes a new configuration usable in one call.
func (c *Client) EnsureCollections(ctx context.Context, dbLink string, spec *store.CollectionSpec) ([]string, error) {
	r, err := c.Resolver(dbLink)
	if err != nil {
		return nil, err
	}
	links, err := r.ResolveForRead(nil)
	if err != nil {
		return nil, err
	}
	var sp store.CollectionSpec
	if spec != nil {
		sp = *spec
	}
	if sp.PartitionKeyPath == "" {
		if kd, ok := r.(keyDefiner); ok && !kd.KeyDef().IsZero() {
			sp.PartitionKeyPath = kd.KeyDef().Paths()[0]
		}
	}
	var created []string
	for _, l := range links {
		err := c.call(ctx, l, "create collection", func() error { return c.st.CreateCollection(ctx, l, &sp) })
		switch {
		case err == nil:
			created = append(created, l)
		case errors.Is(err, store.ErrConflict):
		default:
			return created, err
		}
	}
	return created, nil
}
