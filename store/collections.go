package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ErrKeyPathMismatch: a collection exists partitioned by another path than
// the one wanted, so keyed reads would not find its documents. It is the
// sentinel every *KeyPathError wraps (router.ErrKeyPathMismatch and
// managed.ErrPartitionKeyPath are this same value).
var ErrKeyPathMismatch = errors.New("collection partitioned by another path than the one wanted")

// KeyPathError: collection Collection exists partitioned by Found, not by
// Want (either path as written, a hierarchical key's paths joined by ", ";
// empty means "/id"); an empty Collection
// means a template that names Found where Want is the resolver's key. It
// wraps ErrKeyPathMismatch.
type KeyPathError struct {
	Collection string // the collection link; empty: the template
	Want       string // the partition-key path wanted
	Found      string // the path it is partitioned by
}

// Error implements error, naming the collection, both paths and what to do.
func (e *KeyPathError) Error() string {
	if e.Collection == "" {
		return fmt.Sprintf("the template's partition-key path %s is not the resolver's key %s: leave it out, or make it %s",
			showPath(e.Found), showPath(e.Want), showPath(e.Want))
	}
	return fmt.Sprintf("collection %s exists partitioned by %s, not by %s: keyed reads would miss its documents; "+
		"remove or rename it, or route by a partition key of %s", e.Collection, showPath(e.Found), showPath(e.Want), showPath(e.Found))
}

// Unwrap returns ErrKeyPathMismatch.
func (e *KeyPathError) Unwrap() error { return ErrKeyPathMismatch }

// MissingCollectionError: a collection that must exist and is never
// created again (a spillover's sealed collection, which held documents)
// does not exist. It wraps ErrNotFound.
type MissingCollectionError struct {
	Collection string // the collection link
	Reason     string // why it is not created again, and what to do
}

// Error implements error.
func (e *MissingCollectionError) Error() string {
	return fmt.Sprintf("collection %s does not exist and is not created again: %s", e.Collection, e.Reason)
}

// Unwrap returns ErrNotFound.
func (e *MissingCollectionError) Unwrap() error { return ErrNotFound }

func showPath(p string) string {
	if p == "" {
		return "/id (the default)"
	}
	return p
}

// SameKeyPath reports whether two partition-key paths name the same
// property, comparing their parsed segments as Cosmos DB does: "/a/b" and
// `/"a"/b` are the same path; empty means "/id". A path that does not parse
// is an error wrapping ErrBadRequest. Cost: two parses.
func SameKeyPath(a, b string) (bool, error) {
	pa, err := parseKeyPath(orID(a))
	if err != nil {
		return false, err
	}
	pb, err := parseKeyPath(orID(b))
	if err != nil {
		return false, err
	}
	return slices.Equal(pa.Segments(), pb.Segments()), nil
}

func orID(p string) string {
	if p == "" {
		return "/id"
	}
	return p
}

// Wanted is what EnsureCollections makes exist.
type Wanted struct {
	// Create lists the collections created from Spec when missing.
	Create []string
	// Keep lists collections that must exist and are never created again
	// (KeepReason says why, and what to do): a missing one is a
	// *MissingCollectionError. When none of Create and Keep exists (a new
	// database: nothing was ever stored in them), Keep's are created too.
	Keep       []string
	KeepReason string
	// Spec is the spec of every collection; its PartitionKeyPath (empty
	// means "/id") is the one conflict rule: an existing collection
	// partitioned by another path is a *KeyPathError.
	Spec CollectionSpec
	// Accept, when set, lists other key paths (as CollectionSpec.KeyPaths
	// gives them) an existing collection may be partitioned by instead of
	// Spec's: a composite-key resolver accepts both its hierarchical
	// paths and its first path alone (the collections it made before it
	// had hierarchical ones).
	Accept []string
}

// ensureParallel is how many collections EnsureCollections creates at once.
const ensureParallel = 8

// EnsureCollections makes the collections w names exist, the one way
// docshard does it: each of w.Create is created from w.Spec when missing;
// one that exists must be partitioned by w.Spec's path, compared by
// SameKeyPath (else a *KeyPathError); each of w.Keep must exist (else a
// *MissingCollectionError) and is held to the same path. It returns the
// links it created, in w.Create's order, and every failure joined
// (errors.Join); the collections created before a failure stay, and
// calling it again finishes the job. Cost: a create per collection of
// w.Create, a collection-info read per existing one and per w.Keep, up to
// 8 at once.
func EnsureCollections(ctx context.Context, st Store, w Wanted) ([]string, error) {
	if _, err := checkKeyPaths(new(w.Spec)); err != nil {
		return nil, err
	}
	n := len(w.Create)
	all := append(slices.Clip(w.Create), w.Keep...)
	if len(w.Keep) > 0 && noneExists(ctx, st, all) {
		n = len(all) // a new database: its kept collections never held anything
	}
	created := make([]bool, n)
	errs := make([]error, len(all))
	sem := make(chan struct{}, ensureParallel)
	var wg sync.WaitGroup
	for i, l := range all {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if i < n {
				err := st.CreateCollection(ctx, l, &w.Spec)
				if err == nil {
					created[i] = true
					return
				}
				if !errors.Is(err, ErrConflict) {
					errs[i] = fmt.Errorf("creating %s: %w", l, err)
					return
				}
			}
			errs[i] = checkExisting(ctx, st, l, w.Spec.KeyPaths(), w.Accept, i >= n, w.KeepReason)
		})
	}
	wg.Wait()
	var out []string
	for i, l := range all[:n] {
		if created[i] {
			out = append(out, l)
		}
	}
	return out, errors.Join(errs...)
}

// noneExists reports whether no collection of links exists (a read error
// other than not-found counts as existing, so the caller's own checks
// report it). Cost: a collection-info read per link, until one exists.
func noneExists(ctx context.Context, st Store, links []string) bool {
	for _, l := range links {
		if _, err := st.CollectionInfo(ctx, l); !errors.Is(err, ErrNotFound) {
			return false
		}
	}
	return true
}

// checkExisting holds existing collection l to the key paths want (or
// accept, when set); keep: l is one of Wanted.Keep, whose absence is a
// *MissingCollectionError.
func checkExisting(ctx context.Context, st Store, l string, want, accept []string, keep bool, keepReason string) error {
	info, err := st.CollectionInfo(ctx, l)
	if keep && errors.Is(err, ErrNotFound) {
		if keepReason == "" {
			keepReason = "it must exist; restore it"
		}
		return &MissingCollectionError{Collection: l, Reason: keepReason}
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", l, err)
	}
	found := info.Spec.KeyPaths()
	same, err := SameKeyPaths(found, want)
	if err == nil && !same && len(accept) > 0 {
		same, err = SameKeyPaths(found, accept)
	}
	if err != nil {
		return fmt.Errorf("collection %s: its partition-key path: %w", l, err)
	}
	if !same {
		w := strings.Join(want, ", ")
		if len(accept) > 0 {
			w += " (or " + strings.Join(accept, ", ") + ")"
		}
		return &KeyPathError{Collection: l, Want: w, Found: strings.Join(found, ", ")}
	}
	return nil
}

// CheckReplace checks a collection's new spec against its current one for
// ReplaceCollection and returns the spec to keep: next's settings, with
// cur's partition-key path, unique keys and quota. A changed partition-key
// path or unique keys, or a spec CheckSpec refuses, is an error wrapping
// ErrBadRequest that names the collection l.
func CheckReplace(l string, cur, next *CollectionSpec) (CollectionSpec, error) {
	sp, _, err := CheckSpec(next)
	if err != nil {
		return sp, err
	}
	c, _, err := CheckSpec(cur)
	if err != nil {
		return sp, err
	}
	if same, err := SameKeyPath(sp.PartitionKeyPath, c.PartitionKeyPath); err != nil || !same {
		return sp, Errorf(ErrBadRequest, "replace collection", l, "", "the partition key of a collection cannot change (%s to %s): create another collection and copy the documents", c.PartitionKeyPath, sp.PartitionKeyPath)
	}
	if !slices.EqualFunc(sp.UniqueKeys, c.UniqueKeys, slices.Equal) {
		return sp, Errorf(ErrBadRequest, "replace collection", l, "", "the unique keys of a collection cannot change (%v to %v): create another collection and copy the documents", c.UniqueKeys, sp.UniqueKeys)
	}
	sp.PartitionKeyPath, sp.UniqueKeys, sp.Quota = c.PartitionKeyPath, c.UniqueKeys, c.Quota
	return sp, nil
}
