package transition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
)

// Finding is one document out of place.
type Finding struct {
	ID         string `json:"id"`              // the document's id
	Key        string `json:"key"`             // its partition key's identity text (a composite key's: the array of its parts')
	Collection string `json:"collection"`      // where it is
	Want       string `json:"want,omitempty"`  // where the resolver puts it (ResolveForCreate)
	Other      string `json:"other,omitempty"` // for a duplicate: the other collection that holds it
}

// ErrNoCollections: Verify found none of the resolver's collections in
// the store, which is almost always the wrong store (a mistyped
// store.path, another endpoint) rather than an empty database.
var ErrNoCollections = errors.New("transition: verify: the store holds none of the resolver's collections")

// Report is what Verify found.
type Report struct {
	Documents   int64             // documents read
	Collections []CollectionCount // documents read per collection, in the store's order
	Misplaced   []Finding         // documents not where the resolver puts them
	Duplicates  []Finding         // documents held by two collections
}

// CollectionCount is how many documents Verify read in one collection.
type CollectionCount struct {
	Collection string `json:"collection"`
	Documents  int64  `json:"documents"`
}

// OK reports whether every document is where the resolver puts it, once.
func (r *Report) OK() bool { return len(r.Misplaced) == 0 && len(r.Duplicates) == 0 }

// Verify reads every collection of a database (its state collection
// excepted, collections the resolver does not name included) and reports
// each document that is not in place, and each (id, key) held twice. A
// document is in place in any collection r reads its key from
// (ResolveForRead: every collection that may hold the key, by the
// Resolver contract), so a spillover's documents are in place in whichever
// of its collections holds them, while a ring's must be in the one
// collection it places the key in. A misplaced document's Want is where r
// would put it now (ResolveForCreate); a document whose key r cannot read
// or place is misplaced, with Want empty. Cost: a read feed of every
// document; memory for one entry per document. A store that holds none
// of r's collections is an error wrapping ErrNoCollections, naming them.
func Verify(ctx context.Context, st store.Store, dbLink string, r resolver.Resolver) (*Report, error) {
	st = retry.Ensure(st) // its reads retried by the one layer, never a second
	colls, err := st.ListCollections(ctx, dbLink)
	if err != nil {
		return nil, err
	}
	if err := holdsSome(r, colls); err != nil {
		return nil, err
	}
	state, _ := shardstate.CollectionLink(dbLink)
	rep := &Report{}
	seen := map[string]string{} // id \x00 key -> collection
	for _, c := range colls {
		if c == state {
			continue
		}
		rep.Collections = append(rep.Collections, CollectionCount{Collection: c})
		count := &rep.Collections[len(rep.Collections)-1].Documents
		tok := ""
		for {
			page, err := st.ReadFeed(ctx, c, &store.FeedOptions{Continuation: tok, PageSize: 500})
			if err != nil {
				return rep, fmt.Errorf("transition: verify: reading %s: %w", c, err)
			}
			for _, raw := range page.Items {
				rep.Documents++
				*count++
				f, key, ok := placeKey(r, c, raw)
				ident := f.ID + "\x00" + f.Key
				if prev, dup := seen[ident]; dup {
					f.Other = prev
					rep.Duplicates = append(rep.Duplicates, f)
				} else {
					seen[ident] = c
				}
				if !ok || !inPlace(r, f, key) {
					rep.Misplaced = append(rep.Misplaced, f)
				}
			}
			if tok = page.Continuation; tok == "" {
				break
			}
		}
	}
	return rep, nil
}

// holdsSome checks that colls (the store's) holds at least one of r's.
func holdsSome(r resolver.Resolver, colls []string) error {
	want, err := r.ResolveForRead(nil)
	if err != nil || len(want) == 0 {
		return err
	}
	for _, w := range want {
		for _, c := range colls {
			if link.Same(w, c) {
				return nil
			}
		}
	}
	shown := want
	if len(shown) > 3 {
		shown = append(shown[:3:3], fmt.Sprintf("... %d more", len(want)-3))
	}
	return fmt.Errorf("%w (%d: %s): check that the configuration names the right store (store.path, the endpoint), or load documents first", ErrNoCollections, len(want), strings.Join(shown, ", "))
}

// place says where r puts a stored document found in coll.
func place(r resolver.Resolver, coll string, raw []byte) Finding {
	f, _, _ := placeKey(r, coll, raw)
	return f
}

// placeKey is place, with the document's key and whether r could read it.
func placeKey(r resolver.Resolver, coll string, raw []byte) (Finding, any, bool) {
	var meta struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &meta)
	f := Finding{ID: meta.ID, Collection: coll}
	key, err := r.PartitionKey(raw)
	if err != nil {
		return f, nil, false
	}
	if parts, ok := partitionkey.Parts(key); ok {
		// A composite key's whole identity: a hierarchical collection
		// keeps ids apart by the full key.
		if text, err := partitionkey.AppendCompositeIdentity(nil, parts); err == nil {
			f.Key = string(text)
		}
	} else if text, err := partitionkey.IdentityText(key); err == nil {
		f.Key = text
	}
	f.Want, _ = r.ResolveForCreate(key)
	return f, key, true
}

// inPlace reports whether a document of f with this key is in place where
// it is: in a collection r reads the key from (ResolveForRead), or, when r
// refuses reads (a transition in read mode "none"), the one it writes it
// to.
func inPlace(r resolver.Resolver, f Finding, key any) bool {
	reads, err := r.ResolveForRead(key)
	if err != nil {
		return f.Want != "" && link.Same(f.Want, f.Collection)
	}
	for _, l := range reads {
		if link.Same(l, f.Collection) {
			return true
		}
	}
	return false
}
