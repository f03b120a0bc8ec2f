package transition

import (
	"context"
	"encoding/json"
	"fmt"

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
	Key        string `json:"key"`             // its partition key's identity text
	Collection string `json:"collection"`      // where it is
	Want       string `json:"want,omitempty"`  // where the resolver puts it
	Other      string `json:"other,omitempty"` // for a duplicate: the other collection that holds it
}

// Report is what Verify found.
type Report struct {
	Documents  int64     // documents read
	Misplaced  []Finding // documents not where the resolver puts them
	Duplicates []Finding // documents held by two collections
}

// OK reports whether every document is where the resolver puts it, once.
func (r *Report) OK() bool { return len(r.Misplaced) == 0 && len(r.Duplicates) == 0 }

// Verify reads every collection of a database (its state collection
// excepted, collections the resolver does not name included) and reports
// each document that r places elsewhere, and each (id, key) held twice. A
// document whose key r cannot read or place is misplaced, with Want empty.
// Cost: a read feed of every document; memory for one entry per document.
func Verify(ctx context.Context, st store.Store, dbLink string, r resolver.Resolver) (*Report, error) {
	st = retry.Ensure(st) // its reads retried by the one layer, never a second
	colls, err := st.ListCollections(ctx, dbLink)
	if err != nil {
		return nil, err
	}
	state, _ := shardstate.CollectionLink(dbLink)
	rep := &Report{}
	seen := map[string]string{} // id \x00 key -> collection
	for _, c := range colls {
		if c == state {
			continue
		}
		tok := ""
		for {
			page, err := st.ReadFeed(ctx, c, &store.FeedOptions{Continuation: tok, PageSize: 500})
			if err != nil {
				return rep, fmt.Errorf("transition: verify: reading %s: %w", c, err)
			}
			for _, raw := range page.Items {
				rep.Documents++
				f := place(r, c, raw)
				ident := f.ID + "\x00" + f.Key
				if prev, dup := seen[ident]; dup {
					f.Other = prev
					rep.Duplicates = append(rep.Duplicates, f)
				} else {
					seen[ident] = c
				}
				if f.Want == "" || !link.Same(f.Want, c) {
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

// place says where r puts a stored document.
func place(r resolver.Resolver, coll string, raw []byte) Finding {
	var meta struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &meta)
	f := Finding{ID: meta.ID, Collection: coll}
	key, err := r.PartitionKey(raw)
	if err != nil {
		return f
	}
	if text, err := partitionkey.IdentityText(partitionkey.CollectionKey(key)); err == nil {
		f.Key = text
	}
	f.Want, _ = r.ResolveForCreate(key)
	return f
}
