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

// LeaseFormat names the layout of the lease documents this package writes
// (docs/design.md#leases-at-scale): each in one of LeaseBuckets logical
// partitions, renewed at a fraction of its HoldFor rather than on every
// poll. Leases of the earlier format (Format, in the one partition
// "lease", renewed on every poll) are still read, and judged by their own
// rule; a process of the earlier version, which reads only that partition,
// is refused by the marker document leaseMarkerID with an error naming it.
const LeaseFormat = "docshard.lease/2"

// LeaseBuckets is how many logical partitions the leases are spread over:
// a lease's partition-key value is "lease-NN", NN the FNV-1a hash of its
// router id modulo LeaseBuckets. Fixed, so every process agrees. With N
// routers renewing every R seconds at W RU a write, a bucket takes about
// N·W/(R·LeaseBuckets) RU/s in steady state, and N·W/LeaseBuckets RU
// spread over a poll interval when a change is acknowledged.
const LeaseBuckets = 32

// leaseMarkerID is the id of the marker a router of LeaseFormat writes in
// the earlier lease partition ("lease") before its first lease: a process
// of the earlier version, whose waits read only that partition and refuse
// a document of another format, then fails naming it, instead of taking
// the routers it cannot see for none. It is never removed.
const leaseMarkerID = "docshard.lease.2-routers-lease-in-partitions-lease-00-to-lease-31:upgrade-every-process-that-reshards"

// leaseKind is the partition (the "kind") of router's lease.
func leaseKind(router string) string { return leaseBucket(bucketOf(router, LeaseBuckets)) }

func leaseBucket(b int) string { return fmt.Sprintf("%s-%02d", kindLease, b) }

// Lease is a router's claim to write to a database: the state version it
// routes by. A router may write, by the state it routes by, until the
// earlier of HoldFor after it sent its last renewal and ValidFor after it
// sent its last read of the state that found that version in force (or,
// while it cannot read the state, or has writes in flight by an older
// version, the renewals it then makes every poll), all by its own clock. So
// a change that waits until every lease names its version or has gone
// unchanged for ValidFor (WaitForRouters, after it read the change
// published) knows that no router writes by an older version any more,
// save the writes already on their way to the store (docs/design.md#shared-state
// bounds them). Only a lease unchanged for HoldFor is removed.
type Lease struct {
	// Router is the router's id, unique among the processes sharing the
	// store (router.FollowOptions.RouterID).
	Router string `json:"router"`
	// Database is the database link, "dbs/{db}".
	Database string `json:"database"`
	// Version and Epoch are those of the state the router routes by.
	Version int64 `json:"version"`
	Epoch   int64 `json:"epoch"`
	// ValidFor is how long after a read of the state (or a renewal made
	// while it could not read it) the router may write by it.
	ValidFor time.Duration `json:"validFor"`
	// HoldFor is how long after a renewal the lease stands for the router,
	// which renews it before that (router.FollowOptions.RenewInterval); 0
	// means ValidFor. At least ValidFor.
	HoldFor time.Duration `json:"holdFor,omitempty"`
	// RenewedAt is when the router sent the renewal, by its own clock:
	// for people reading the lease; WaitForRouters does not trust it.
	RenewedAt time.Time `json:"renewedAt"`
	// ETag is the lease document's ETag as last read or written.
	ETag string `json:"-"`
	// docID and kind are the lease document's id and partition as Leases
	// read it (an earlier version's id, or its partition "lease"); legacy,
	// whether it is of the earlier format (Format), renewed every poll.
	docID, kind string
	legacy      bool
}

// Legacy reports whether the lease is of the earlier format (a router of
// an earlier docshard version): renewed on every poll, and lapsed when it
// has gone unrenewed for ValidFor.
func (l *Lease) Legacy() bool { return l.legacy }

// hold is how long the lease stands after a renewal.
func (l *Lease) hold() time.Duration { return max(l.HoldFor, l.ValidFor) }

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
// and partition it was read under. An earlier version's id (percent
// escapes, which Cosmos DB's gateway decodes in a request path before
// checking its signature, so a point delete of it is refused) is deleted in
// a transactional batch, whose operations name the id in the body, when
// the store has them.
func removeLease(ctx context.Context, st store.Store, coll string, l *Lease) error {
	id, kind := l.docID, l.kind
	if id == "" {
		id = leaseID(l.Router)
	}
	if kind == "" {
		kind = leaseKind(l.Router)
	}
	if b, ok := st.(store.Batcher); ok && id != leaseID(l.Router) {
		_, err := b.ExecuteBatch(ctx, coll, kind, []store.BatchOp{{Kind: store.BatchDelete, ID: id, IfMatch: l.ETag}}, nil)
		return err
	}
	return st.Delete(ctx, coll, id, &store.WriteOptions{PartitionKey: kind, IfMatch: l.ETag})
}

// ErrLeaseLost: a lease renewed on condition of its ETag was removed (a
// change found it lapsed) or rewritten meanwhile. The router must take a new
// lease and read the state again before it writes.
var ErrLeaseLost = errors.New("shardstate: the lease was lost")

// RenewLease writes a router's lease, in its bucket's partition, and
// returns it with its new ETag. With l.ETag set it renews on condition of
// it, and fails with an error wrapping ErrLeaseLost when the lease was
// removed or rewritten meanwhile; without, it takes the lease (creating or
// overwriting it), after making sure the marker that refuses earlier
// versions' waits is there. A router takes its lease before it reads the
// state it will route by, so a change published before the lease was
// written is seen (see Lease). Cost: one write; taking, a second (the
// marker's create, refused as a conflict once it exists).
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
	if l.HoldFor < 0 {
		return nil, fmt.Errorf("shardstate: lease of %s: HoldFor %s must not be negative", l.Router, l.HoldFor)
	}
	l.Database = db
	kind := leaseKind(l.Router)
	body, err := json.Marshal(leaseDocument{ID: leaseID(l.Router), Kind: kind, Format: LeaseFormat, Lease: l})
	if err != nil {
		return nil, fmt.Errorf("shardstate: encoding the lease of %s: %w", l.Router, err)
	}
	var d *store.Document
	if l.ETag == "" {
		if err := markLeases(ctx, st, coll); err != nil {
			return nil, fmt.Errorf("shardstate: taking the lease of router %s on %s: %w", l.Router, db, err)
		}
		d, err = st.Upsert(ctx, coll, body, &store.WriteOptions{PartitionKey: kind})
	} else {
		d, err = st.Replace(ctx, coll, leaseID(l.Router), body, &store.WriteOptions{PartitionKey: kind, IfMatch: l.ETag})
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrPreconditionFailed) {
			return nil, fmt.Errorf("%w: router %s on %s: %w", ErrLeaseLost, l.Router, db, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("shardstate: renewing the lease of router %s on %s: %w", l.Router, db, err)
	}
	l.ETag, l.docID, l.kind = d.ETag, leaseID(l.Router), kind
	return &l, nil
}

// markLeases creates the marker document leaseMarkerID unless it exists.
func markLeases(ctx context.Context, st store.Store, coll string) error {
	body, err := json.Marshal(map[string]string{"id": leaseMarkerID, "kind": kindLease, "format": LeaseFormat,
		"note": "routers of " + LeaseFormat + " hold their leases in the partitions lease-00 to lease-31; a process that reads only this partition cannot see them and must be upgraded"})
	if err != nil {
		return err
	}
	_, err = st.Create(retry.Repeatable(ctx), coll, body, &store.WriteOptions{PartitionKey: kindLease})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("writing the lease format's marker: %w", err)
	}
	return nil
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
	err = st.Delete(ctx, coll, leaseID(router), &store.WriteOptions{PartitionKey: leaseKind(router)})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("shardstate: releasing the lease of router %s on %s: %w", router, db, err)
	}
	return nil
}

// allLeaseKinds are the partitions leases live in: the earlier format's
// "lease" and every bucket.
func allLeaseKinds() []string {
	kinds := make([]string, 0, LeaseBuckets+1)
	kinds = append(kinds, kindLease)
	for b := range LeaseBuckets {
		kinds = append(kinds, leaseBucket(b))
	}
	return kinds
}

// Leases returns the leases held on a database, by router id: those of
// LeaseFormat in every bucket and those of the earlier format. A broken
// lease document is a *DocumentError naming it. Cost: one query per
// partition (LeaseBuckets + 1, parallelReads at a time), paged.
func Leases(ctx context.Context, st store.Store, dbLink string) ([]*Lease, error) {
	st = retry.Ensure(st)
	db, coll, err := names(dbLink)
	if err != nil {
		return nil, err
	}
	read, err := leasesOf(ctx, st, db, coll, allLeaseKinds(), 0)
	if err != nil {
		return nil, err
	}
	var out []*Lease
	for _, ls := range read {
		out = append(out, ls...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Router < out[j].Router })
	return out, nil
}

// parallelReads bounds how many partitions of the state collection (lease
// buckets, copies of the state) are read at once.
const parallelReads = 16

// leasesOf is leasesIn for each partition of kinds, read parallelReads at
// a time: the leases of kinds[i] are at [i]. With an error, those read
// before it are there too.
func leasesOf(ctx context.Context, st store.Store, db, coll string, kinds []string, below int64) ([][]*Lease, error) {
	out := make([][]*Lease, len(kinds))
	err := inParallel(ctx, len(kinds), func(ctx context.Context, i int) (err error) {
		out[i], err = leasesIn(ctx, st, db, coll, kinds[i], below)
		return err
	})
	return out, err
}

// leasesIn returns the leases in partition kind, those naming a version
// below below only when it is positive. Cost: one query, paged.
func leasesIn(ctx context.Context, st store.Store, db, coll, kind string, below int64) ([]*Lease, error) {
	q := store.Query{Text: "SELECT * FROM c WHERE c.kind = @kind", Parameters: []store.Param{{Name: "@kind", Value: kind}}}
	if below > 0 {
		q.Text += " AND c.version < @v"
		q.Parameters = append(q.Parameters, store.Param{Name: "@v", Value: below})
	}
	opts := &store.QueryOptions{PartitionKey: kind}
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
			want := LeaseFormat
			if kind == kindLease {
				want = Format
			}
			switch {
			case err != nil:
			case kind == kindLease && d.ID == leaseMarkerID:
				continue
			case d.Format != want:
				err = fmt.Errorf("format %q, want %q (a lease in partition %q)", d.Format, want, kind)
			case d.Router == "" || d.ValidFor <= 0 || d.HoldFor < 0:
				err = fmt.Errorf("router %q, validFor %s, holdFor %s: want a router id and positive durations", d.Router, d.ValidFor, d.HoldFor)
			case d.Database != db:
				err = fmt.Errorf("database %q, want %q", d.Database, db)
			}
			if err != nil {
				return nil, &DocumentError{Link: coll, ID: idOf(item), Err: err}
			}
			d.Lease.ETag, d.Lease.docID, d.Lease.kind, d.Lease.legacy = sys.ETag, d.ID, kind, kind == kindLease
			out = append(out, &d.Lease)
		}
		if page.Continuation == "" {
			break
		}
		opts.Continuation = page.Continuation
	}
	return out, nil
}

// How long a wait counts a partition's stale leases before it reads them:
// once a count of at most fewStale was found twice in a row, or a larger
// one patience+1 times (a second at the default poll), and at the latest
// on its maxCounts+1-th poll (three seconds at the default poll, past a
// router's default poll interval: routers coming and going keep a count
// moving, and a dead router's lease must still be timed).
const (
	fewStale  = 8
	patience  = 4
	maxCounts = 12
)

// staleCounts returns, for each partition of kinds, how many leases in it
// name a version below below, counted by the store (parallelReads
// partitions at a time). Cost: one aggregate query per partition, each
// answering one number.
func staleCounts(ctx context.Context, st store.Store, db, coll string, kinds []string, below int64) ([]int64, error) {
	out := make([]int64, len(kinds))
	err := inParallel(ctx, len(kinds), func(ctx context.Context, i int) error {
		kind := kinds[i]
		q := store.Query{Text: "SELECT VALUE COUNT(1) FROM c WHERE c.kind = @kind AND c.version < @v",
			Parameters: []store.Param{{Name: "@kind", Value: kind}, {Name: "@v", Value: below}}}
		page, err := st.Query(ctx, coll, q, &store.QueryOptions{PartitionKey: kind})
		switch {
		case errors.Is(err, store.ErrCollectionNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("shardstate: counting the leases of %s: %w", db, err)
		case len(page.Items) != 1:
			return fmt.Errorf("shardstate: counting the leases of %s in partition %q: %d answers, want 1", db, kind, len(page.Items))
		}
		if err := json.Unmarshal(page.Items[0], &out[i]); err != nil {
			return fmt.Errorf("shardstate: counting the leases of %s in partition %q: %w", db, kind, err)
		}
		return nil
	})
	return out, err
}

// WaitOptions qualify WaitForRouters. A nil *WaitOptions means defaults.
type WaitOptions struct {
	// Poll is how often the leases still waited for are read; 0 means
	// 250 ms.
	Poll time.Duration
	// Margin is added to a lease's ValidFor (and HoldFor) before it counts
	// as lapsed, for the drift between clocks' rates and for writes on
	// their way to the store; 0 means a tenth of the duration, at least
	// 500 ms.
	Margin time.Duration
	// Pending, when set, is called after each poll with the leases still
	// waited for that the wait has read by name (a bucket whose stale
	// leases are only counted so far is not among them: see
	// WaitForRouters).
	Pending func([]*Lease)
}

// StaleRoutersError reports the routers WaitForRouters still waited for
// when its context ended.
type StaleRoutersError struct {
	Database string
	Version  int64
	Routers  []*Lease
	// Unnamed is how many more leases naming an older version the last
	// poll counted without reading them (the wait reads a partition's
	// stale leases once their count stops falling).
	Unnamed int
	Err     error // the context's error
}

// Error implements error.
func (e *StaleRoutersError) Error() string {
	names := make([]string, len(e.Routers))
	for i, l := range e.Routers {
		names[i] = fmt.Sprintf("%s (version %d)", l.Router, l.Version)
	}
	if e.Unnamed > 0 {
		names = append(names, fmt.Sprintf("%d more not read by name", e.Unnamed))
	}
	return fmt.Sprintf("shardstate: %s: %d router(s) neither acknowledged version %d nor let their lease lapse: %s: %v",
		e.Database, len(e.Routers)+e.Unnamed, e.Version, strings.Join(names, ", "), e.Err)
}

// Unwrap returns the context's error.
func (e *StaleRoutersError) Unwrap() error { return e.Err }

// WaitForRouters waits until no router may write by a state older than
// version: every lease names version or later, or has gone unchanged long
// enough, timed on this process's clock from when this call first saw the
// lease as it is (so no two clocks need agree): ValidFor plus the margin
// when the state read at the start of the call is at version or later (a
// router reads the state at least every ValidFor to go on writing, and
// every read sent after that one finds version), else the lease's HoldFor
// plus the margin; an earlier version's lease (Lease.Legacy), ValidFor plus
// the margin. It deletes the leases unchanged for HoldFor plus the margin
// (If-Match, so a renewal that lands meanwhile keeps its lease). When ctx
// ends first, the error is a *StaleRoutersError naming the routers.
//
// Version counts as published (the ValidFor rule above) once the state
// read at the start holds it and every copy of the state the routers poll
// (StateCopies) has been brought to it.
//
// Cost: a state read, StateCopies copy reads (and a write per copy
// behind); then, per poll, for each lease partition that still holds a
// lease waited for (every partition on the first poll, and on every poll
// while version is not published: LeaseBuckets + 1), an aggregate query
// counting its leases naming an older version while that count falls,
// and once it stops falling a query returning those leases. A fleet that
// acknowledges the change within a few polls is waited for at about
// 3.3 RU per partition and poll on Cosmos DB's charges, whatever its size.
// The wait is at most the longest ValidFor plus the margin after version
// was read published, and a few polls more for a lease first counted (its
// partition's count found unchanged twice, or five times when above 8, and
// at the latest on the thirteenth poll that counts it).
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
	// A router goes on reading the state to go on writing: once version
	// is read published, every read sent later finds it.
	// Routers read copies of the state (StateCopies): version counts as
	// published once every copy holds it too. A version found published
	// whose copies could not all be brought forward is tried again on the
	// next poll.
	published, spreadTo := false, (*State)(nil)
	if s, err := Peek(ctx, st, db); err == nil {
		if s.Version >= version {
			spreadTo = s
		}
	} else if !errors.Is(err, ErrNoState) && !errors.Is(err, ErrInvalidState) {
		return err
	}
	tryPublished := func() error {
		if spreadTo == nil || published {
			return nil
		}
		err := spread(ctx, st, coll, spreadTo)
		if err != nil && ctx.Err() != nil {
			return err
		}
		if published = err == nil; published {
			// A lease is timed by the ValidFor rule only from a sighting
			// after the version counted as published (design, case 3).
			clear(seen)
		}
		return nil
	}
	margin := func(d time.Duration) time.Duration {
		if o.Margin > 0 {
			return o.Margin
		}
		return max(d/10, 500*time.Millisecond)
	}
	kinds := allLeaseKinds()
	// A partition's stale leases are counted (one small answer) until
	// their count stops falling, then read (each lease, to time it): a
	// fleet acknowledging a change is waited for at the cost of a count
	// per partition and poll, and only the leases that stay stale are
	// read. A count of more than fewStale must stay put for patience
	// polls before its leases are read: the first polls after a change
	// often find no router acknowledged yet.
	type tally struct {
		n      int64 // the last count
		polls  int   // how many polls in a row found it
		counts int   // how many polls counted the partition
	}
	counted := map[string]tally{} // by partition
	reading := map[string]bool{}  // partitions whose stale leases are read
	var pending, last []*Lease    // as of this poll, and the one before
	var lastUnnamed int64         // the stale leases the poll before counted, not read
	for {
		if err := tryPublished(); err != nil {
			return err
		}
		last, pending = pending, nil
		var next []string // the partitions to read again
		var toCount, toRead []string
		for _, kind := range kinds {
			if reading[kind] {
				toRead = append(toRead, kind)
			} else {
				toCount = append(toCount, kind)
			}
		}
		counts, err := staleCounts(ctx, st, db, coll, toCount, version)
		var read [][]*Lease
		unnamed := int64(0) // stale leases counted, not read
		if err == nil {
			for i, kind := range toCount {
				c := counted[kind]
				c.counts++
				if c.n == counts[i] {
					c.polls++
				} else {
					c.n, c.polls = counts[i], 1
				}
				counted[kind] = c
				switch {
				case c.n == 0:
				case c.polls > 1 && c.n <= fewStale || c.polls > patience || c.counts > maxCounts:
					reading[kind] = true
					toRead = append(toRead, kind)
				default:
					unnamed += c.n
					next = append(next, kind)
				}
			}
			read, err = leasesOf(ctx, st, db, coll, toRead, version)
		}
		if err != nil {
			if ctx.Err() != nil {
				// Name the routers of the last poll, and those this one
				// read before the context ended.
				stale := map[string]*Lease{}
				for _, l := range last {
					stale[l.kind+"/"+l.docID] = l
				}
				for _, ls := range read {
					for _, l := range ls {
						stale[l.kind+"/"+l.docID] = l
					}
				}
				unnamed = max(unnamed, lastUnnamed) // this poll's counts may not have come
				if len(stale) > 0 || unnamed > 0 {
					routers := make([]*Lease, 0, len(stale))
					for _, l := range stale {
						routers = append(routers, l)
					}
					sort.Slice(routers, func(i, j int) bool { return routers[i].Router < routers[j].Router })
					return &StaleRoutersError{Database: db, Version: version, Routers: routers, Unnamed: int(unnamed), Err: ctx.Err()}
				}
			}
			return err
		}
		for i, kind := range toRead {
			leases := read[i]
			waits := false
			for _, l := range leases {
				key := l.kind + "/" + l.docID
				s, ok := seen[key]
				if !ok || s.etag != l.ETag {
					seen[key] = sighting{etag: l.ETag, since: time.Now()}
					pending = append(pending, l)
					waits = true
					continue
				}
				quiet := time.Since(s.since)
				if quiet <= l.hold()+margin(l.hold()) && (l.legacy || !published || quiet <= l.ValidFor+margin(l.ValidFor)) {
					pending = append(pending, l)
					waits = true
					continue
				}
				if quiet <= l.hold()+margin(l.hold()) {
					continue // lapsed for this change, still held: it may be read again
				}
				// Lapsed. Remove it unless it was renewed meanwhile.
				err := removeLease(ctx, st, coll, l)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					if errors.Is(err, store.ErrPreconditionFailed) {
						pending = append(pending, l)
						waits = true
						continue
					}
					return fmt.Errorf("shardstate: removing the lapsed lease of router %s on %s: %w", l.Router, db, err)
				}
			}
			if waits {
				next = append(next, kind)
			}
		}
		if published {
			// A lease written since is its router's first, and the state
			// read after it finds version: only these can hold a lease
			// still waited for.
			kinds = next
		}
		sort.Slice(pending, func(i, j int) bool { return pending[i].Router < pending[j].Router })
		if o.Pending != nil {
			o.Pending(pending)
		}
		if len(pending) == 0 && unnamed == 0 {
			return nil
		}
		lastUnnamed = unnamed
		t := time.NewTimer(o.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return &StaleRoutersError{Database: db, Version: version, Routers: pending, Unnamed: int(unnamed), Err: ctx.Err()}
		case <-t.C:
		}
	}
}
