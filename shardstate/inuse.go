package shardstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
)

// ErrInUse: a database has no state document, but its state collection
// or the store show that a fleet routed it by one: router leases, history
// versions, copies of the state (StateCopies), or a raised fence. Its state document was deleted (or lost),
// and creating a new one from some resolver (Init, router.FollowOptions.Seed,
// docshard load, Open) would fork the placement: the running routers keep
// the resolver they last read, the new one routes by its own. Restore puts
// a state back above everything the fleet saw. The error is an *InUseError.
var ErrInUse = errors.New("shardstate: the state document is missing, but a fleet uses the database")

// InUseError names what shows a fleet uses a database whose state
// document is missing. It wraps ErrInUse and ErrNoState.
type InUseError struct {
	Database string
	Leases   []*Lease // the router leases held on it
	History  int64    // the last version in its history; 0 when none
	Copies   int64    // the highest version a copy of the state holds (StateCopies); 0 when none
	Fence    int64    // the store's fence; 0 when none was raised, or the store does not fence
}

// Error implements error, naming the leases, the history and the fence,
// and the recovery command.
func (e *InUseError) Error() string {
	var seen []string
	if n := len(e.Leases); n > 0 {
		names := make([]string, 0, min(n, 3))
		for _, l := range e.Leases[:min(n, 3)] {
			names = append(names, fmt.Sprintf("%s (version %d)", l.Router, l.Version))
		}
		more := ""
		if n > 3 {
			more = fmt.Sprintf(" and %d more", n-3)
		}
		seen = append(seen, fmt.Sprintf("%d router lease(s): %s%s", n, strings.Join(names, ", "), more))
	}
	if e.History > 0 {
		seen = append(seen, fmt.Sprintf("a history up to version %d", e.History))
	}
	if e.Copies > 0 {
		seen = append(seen, fmt.Sprintf("copies of the state up to version %d", e.Copies))
	}
	if e.Fence > 0 {
		seen = append(seen, fmt.Sprintf("the store's fence at epoch %d", e.Fence))
	}
	return fmt.Sprintf("shardstate: the state document of %s is missing, but %s show a fleet routes it by one: it is not created again from a resolver, which would fork the placement; restore it with `docshard state set -c FILE RESOLVER.json` (shardstate.Restore), giving the resolver the fleet routes by",
		e.Database, strings.Join(seen, ", "))
}

// Unwrap returns ErrInUse and ErrNoState.
func (e *InUseError) Unwrap() []error { return []error{ErrInUse, ErrNoState} }

// traces is what a database's state collection and store hold besides the
// state document: its leases, its history's last version and epoch, and
// the fence.
type traces struct {
	db, coll             string // the database link and its state collection
	leases               []*Lease
	history, histEpoch   int64
	copies, copyEpoch    int64 // the highest version and epoch a copy of the state holds
	fence                int64
	leaseVer, leaseEpoch int64 // the highest among the leases
}

func (t *traces) used() bool {
	return len(t.leases) > 0 || t.history > 0 || t.copies > 0 || t.fence > 0
}

// readTraces reads the traces of database dbLink in st (retry.Ensure'd).
// Cost: a lease query, a history query for its last version, and a fence
// read on a store.Fencer, and StateCopies point reads.
func readTraces(ctx context.Context, st store.Store, dbLink string) (*traces, error) {
	db, coll, err := names(dbLink)
	if err != nil {
		return nil, err
	}
	t := traces{db: db, coll: coll}
	if t.leases, err = Leases(ctx, st, db); err != nil {
		return nil, err
	}
	for _, l := range t.leases {
		t.leaseVer, t.leaseEpoch = max(t.leaseVer, l.Version), max(t.leaseEpoch, l.Epoch)
	}
	q := store.Query{Text: "SELECT TOP 1 c.version, c.epoch FROM c WHERE c.kind = @kind ORDER BY c.version DESC",
		Parameters: []store.Param{{Name: "@kind", Value: kindHistory}}}
	page, err := st.Query(ctx, coll, q, &store.QueryOptions{PartitionKey: kindHistory})
	switch {
	case errors.Is(err, store.ErrCollectionNotFound):
	case err != nil:
		return nil, fmt.Errorf("shardstate: reading the history of %s: %w", db, err)
	case len(page.Items) > 0:
		var last struct{ Version, Epoch int64 }
		if err := json.Unmarshal(page.Items[0], &last); err != nil {
			return nil, &DocumentError{Link: coll, ID: "history", Err: err}
		}
		t.history, t.histEpoch = last.Version, last.Epoch
	}
	if t.copies, t.copyEpoch, err = copiesVersion(ctx, st, db, coll); err != nil {
		return nil, err
	}
	if f, ok := st.(store.Fencer); ok {
		if t.fence, err = f.Fence(ctx, db); err != nil {
			return nil, fmt.Errorf("shardstate: reading the fence of %s: %w", db, err)
		}
	}
	return &t, nil
}

// InUse reports whether a database without a state document is used by a
// fleet: nil when nothing shows it (a new database: its state may be
// created from a resolver), an *InUseError (wrapping ErrInUse and
// ErrNoState) naming the leases, history and fence when something does.
// It does not look at the state document itself: call it after Load
// found none. Init calls it before creating a state. Cost: a lease query,
// a one-row history query, StateCopies point reads, and a fence read on a
// store.Fencer.
func InUse(ctx context.Context, st store.Store, dbLink string) error {
	t, err := readTraces(ctx, retry.Ensure(st), dbLink)
	if err != nil {
		return err
	}
	return t.inUse()
}

func (t *traces) inUse() error {
	if !t.used() {
		return nil
	}
	return &InUseError{Database: t.db, Leases: t.leases, History: t.history, Copies: t.copies, Fence: t.fence}
}

// Restore creates a database's state document with resolver r when it is
// missing: on a new database as Init does (version 1, epoch 1); on one a
// fleet used (see InUse: its document was deleted) above everything the
// fleet saw, so every router takes it as a new version and every stale
// write is fenced: the version one above the lost one (the history's last
// plus one, or the highest a lease or a copy of the state names, whichever
// is higher), the epoch
// one above the highest of the history's, the leases', the copies' and the
// fence, which
// it raises to it. r should be the resolver the fleet routes by (the
// documents stay where they are). A state that exists is a *ConflictError
// carrying it, as with Init. This is what `docshard state set` does on a
// database without a state. Cost: Init's, InUse's, and a fence raise.
func Restore(ctx context.Context, st store.Store, dbLink string, r resolver.Resolver, opts *InitOptions) (*State, error) {
	st = retry.Ensure(st)
	t, err := readTraces(ctx, st, dbLink)
	if err != nil {
		return nil, err
	}
	v := max(t.history+1, t.leaseVer, t.copies) // the lost version, at least
	if !t.used() {
		v = 0
	}
	s, err := create(ctx, st, t, r, opts, v+1, max(t.histEpoch, t.leaseEpoch, t.copyEpoch, t.fence)+1)
	if err != nil {
		return nil, err
	}
	if err := RaiseFence(ctx, st, s); err != nil {
		return s, err
	}
	return s, nil
}
