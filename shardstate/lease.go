package shardstate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
)

// Lease is a router's claim to write to a database: the state version it
// routes by, renewed on every poll. A router may write for ValidFor after
// it sent its last successful renewal (by its own clock), and only with the
// state it read after that renewal: so a change that waits until every lease
// under an older version has been acknowledged or has gone unrenewed for
// ValidFor (WaitForRouters) knows that no router writes by the older
// version any more, save the writes already on their way to the store
// (docs/design.md#shared-state bounds them).
type Lease struct {
	// Router is the router's id, unique among the processes sharing the
	// store (router.FollowOptions.RouterID).
	Router string `json:"router"`
	// Database is the database link, "dbs/{db}".
	Database string `json:"database"`
	// Version and Epoch are those of the state the router routes by.
	Version int64 `json:"version"`
	Epoch   int64 `json:"epoch"`
	// ValidFor is how long after a renewal the router may write.
	ValidFor time.Duration `json:"validFor"`
	// RenewedAt is when the router sent the renewal, by its own clock:
	// for people reading the lease; WaitForRouters does not trust it.
	RenewedAt time.Time `json:"renewedAt"`
	// ETag is the lease document's ETag as last read or written.
	ETag string `json:"-"`
	// docID is the lease document's id as Leases read it (leaseID, or an
	// earlier version's form).
	docID string
}

type leaseDocument struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Format string `json:"format"`
	Lease
}

// leaseID is the document id of a router's lease: "lease." and the router
// id in unpadded base64url, whose letters are safe in a resource path as
// Cosmos DB's gateway reads it. (Ids of earlier versions, "lease-" and the
// id percent-escaped, held escapes such as %2F that the gateway decodes
// before it checks a request's signature: a replace or delete of one was
// refused 401. Such leases are still read, and removed by their own id.)
func leaseID(router string) string {
	return "lease." + base64.RawURLEncoding.EncodeToString([]byte(router))
}

// removeLease deletes a lapsed lease on condition of its ETag, by the id
// it was read under. An earlier version's id (percent escapes, which Cosmos
// DB's gateway decodes in a request path before checking its signature,
// so a point delete of it is refused) is deleted in a transactional batch,
// whose operations name the id in the body, when the store has them.
func removeLease(ctx context.Context, st store.Store, coll string, l *Lease) error {
	id := l.docID
	if id == "" {
		id = leaseID(l.Router)
	}
	if b, ok := st.(store.Batcher); ok && id != leaseID(l.Router) {
		_, err := b.ExecuteBatch(ctx, coll, kindLease, []store.BatchOp{{Kind: store.BatchDelete, ID: id, IfMatch: l.ETag}}, nil)
		return err
	}
	return st.Delete(ctx, coll, id, &store.WriteOptions{PartitionKey: kindLease, IfMatch: l.ETag})
}

// ErrLeaseLost: a lease renewed on condition of its ETag was removed (a
// change found it lapsed) or rewritten meanwhile. The router must take a new
// lease and read the state again before it writes.
var ErrLeaseLost = errors.New("shardstate: the lease was lost")

// RenewLease writes a router's lease and returns it with its new ETag.
// With l.ETag set it renews on condition of it, and fails with an error
// wrapping ErrLeaseLost when the lease was removed or rewritten meanwhile;
// without, it takes the lease (creating or overwriting it). A router takes
// or renews its lease before it reads the state it will route by, so a
// change published before the lease was written is seen (see Lease). Cost:
// one write.
func RenewLease(ctx context.Context, st store.Store, l Lease) (*Lease, error) {
	st = retry.Ensure(st)
	db, coll, err := names(l.Database)
	if err != nil {
		return nil, err
	}
	if l.Router == "" {
		return nil, errors.New("shardstate: a lease needs its router's id")
	}
	if l.ValidFor <= 0 {
		return nil, fmt.Errorf("shardstate: lease of %s: ValidFor %s must be positive", l.Router, l.ValidFor)
	}
	l.Database = db
	body, err := json.Marshal(leaseDocument{ID: leaseID(l.Router), Kind: kindLease, Format: Format, Lease: l})
	if err != nil {
		return nil, fmt.Errorf("shardstate: encoding the lease of %s: %w", l.Router, err)
	}
	var d *store.Document
	if l.ETag == "" {
		d, err = st.Upsert(ctx, coll, body, &store.WriteOptions{PartitionKey: kindLease})
	} else {
		d, err = st.Replace(ctx, coll, leaseID(l.Router), body, &store.WriteOptions{PartitionKey: kindLease, IfMatch: l.ETag})
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrPreconditionFailed) {
			return nil, fmt.Errorf("%w: router %s on %s: %w", ErrLeaseLost, l.Router, db, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("shardstate: renewing the lease of router %s on %s: %w", l.Router, db, err)
	}
	l.ETag = d.ETag
	return &l, nil
}

// ReleaseLease deletes a router's lease, as a router does when it stops
// following the state: a change need not wait for it to lapse. A missing
// lease is not an error. Cost: one delete.
func ReleaseLease(ctx context.Context, st store.Store, dbLink, router string) error {
	st = retry.Ensure(st)
	db, coll, err := names(dbLink)
	if err != nil {
		return err
	}
	err = st.Delete(ctx, coll, leaseID(router), &store.WriteOptions{PartitionKey: kindLease})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("shardstate: releasing the lease of router %s on %s: %w", router, db, err)
	}
	return nil
}

// Leases returns the leases held on a database, by router id. A broken
// lease document is a *DocumentError naming it. Cost: one query over the
// lease partition, paged.
func Leases(ctx context.Context, st store.Store, dbLink string) ([]*Lease, error) {
	st = retry.Ensure(st)
	db, coll, err := names(dbLink)
	if err != nil {
		return nil, err
	}
	q := store.Query{Text: "SELECT * FROM c WHERE c.kind = @kind", Parameters: []store.Param{{Name: "@kind", Value: kindLease}}}
	opts := &store.QueryOptions{PartitionKey: kindLease}
	var out []*Lease
	for {
		page, err := st.Query(ctx, coll, q, opts)
		if errors.Is(err, store.ErrCollectionNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("shardstate: reading the leases of %s: %w", db, err)
		}
		for _, item := range page.Items {
			var d leaseDocument
			var sys struct {
				ETag string `json:"_etag"`
			}
			err := json.Unmarshal(item, &d)
			if err == nil {
				err = json.Unmarshal(item, &sys)
			}
			switch {
			case err != nil:
			case d.Format != Format:
				err = fmt.Errorf("format %q, want %q", d.Format, Format)
			case d.Router == "" || d.ValidFor <= 0:
				err = fmt.Errorf("router %q, validFor %s: want a router id and a positive duration", d.Router, d.ValidFor)
			case d.Database != db:
				err = fmt.Errorf("database %q, want %q", d.Database, db)
			}
			if err != nil {
				return nil, &DocumentError{Link: coll, ID: idOf(item), Err: err}
			}
			d.Lease.ETag, d.Lease.docID = sys.ETag, d.ID
			out = append(out, &d.Lease)
		}
		if page.Continuation == "" {
			break
		}
		opts.Continuation = page.Continuation
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Router < out[j].Router })
	return out, nil
}

// WaitOptions qualify WaitForRouters. A nil *WaitOptions means defaults.
type WaitOptions struct {
	// Poll is how often the leases are read; 0 means 250 ms.
	Poll time.Duration
	// Margin is added to a lease's ValidFor before it counts as lapsed,
	// for the drift between clocks' rates and for writes on their way to
	// the store; 0 means a tenth of ValidFor, at least 500 ms.
	Margin time.Duration
	// Pending, when set, is called after each poll with the leases still
	// waited for.
	Pending func([]*Lease)
}

// StaleRoutersError reports the routers WaitForRouters still waited for
// when its context ended.
type StaleRoutersError struct {
	Database string
	Version  int64
	Routers  []*Lease
	Err      error // the context's error
}

// Error implements error.
func (e *StaleRoutersError) Error() string {
	names := make([]string, len(e.Routers))
	for i, l := range e.Routers {
		names[i] = fmt.Sprintf("%s (version %d)", l.Router, l.Version)
	}
	return fmt.Sprintf("shardstate: %s: %d router(s) neither acknowledged version %d nor let their lease lapse: %s: %v",
		e.Database, len(e.Routers), e.Version, strings.Join(names, ", "), e.Err)
}

// Unwrap returns the context's error.
func (e *StaleRoutersError) Unwrap() error { return e.Err }

// WaitForRouters waits until no router may write by a state older than
// version: every lease names version or later, or has gone unrenewed for
// its ValidFor plus the margin, timed on this process's clock from when
// this call first saw the lease as it is (so no two clocks need agree). It
// deletes the leases it finds lapsed (If-Match, so a renewal that lands
// meanwhile keeps its lease). When ctx ends first, the error is a
// *StaleRoutersError naming the routers. Cost: one lease query per poll;
// the wait is at most the longest ValidFor plus the margin.
func WaitForRouters(ctx context.Context, st store.Store, dbLink string, version int64, opts *WaitOptions) error {
	st = retry.Ensure(st)
	o := opt.Of(opts)
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	db, coll, err := names(dbLink)
	if err != nil {
		return err
	}
	type sighting struct {
		etag  string
		since time.Time
	}
	seen := map[string]sighting{}
	var pending []*Lease // as of the last poll
	for {
		leases, err := Leases(ctx, st, db)
		if err != nil {
			if ctx.Err() != nil && len(pending) > 0 {
				return &StaleRoutersError{Database: db, Version: version, Routers: pending, Err: ctx.Err()}
			}
			return err
		}
		pending = pending[:0:0]
		for _, l := range leases {
			if l.Version >= version {
				continue
			}
			s, ok := seen[l.Router]
			if !ok || s.etag != l.ETag {
				seen[l.Router] = sighting{etag: l.ETag, since: time.Now()}
				pending = append(pending, l)
				continue
			}
			margin := o.Margin
			if margin <= 0 {
				margin = max(l.ValidFor/10, 500*time.Millisecond)
			}
			if time.Since(s.since) <= l.ValidFor+margin {
				pending = append(pending, l)
				continue
			}
			// Lapsed. Remove it unless it was renewed meanwhile.
			err := removeLease(ctx, st, coll, l)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				if errors.Is(err, store.ErrPreconditionFailed) {
					pending = append(pending, l)
					continue
				}
				return fmt.Errorf("shardstate: removing the lapsed lease of router %s on %s: %w", l.Router, db, err)
			}
		}
		if o.Pending != nil {
			o.Pending(pending)
		}
		if len(pending) == 0 {
			return nil
		}
		t := time.NewTimer(o.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return &StaleRoutersError{Database: db, Version: version, Routers: pending, Err: ctx.Err()}
		case <-t.C:
		}
	}
}
