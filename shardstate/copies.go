package shardstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"

	"golang.org/x/sync/errgroup"

	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
)

// StateCopies is how many copies of the state document the state
// collection keeps for the routers to poll, each in a logical partition of
// its own ("state-0" to "state-7", each its partition's name as its id), so that a fleet's polls
// are spread over StateCopies+1 partitions instead of loading one
// (docs/design.md#state-copies). A router reads the copy its router id
// hashes to (FNV-1a modulo StateCopies) and, on every StateCopies-th poll,
// the state document itself, which brings its copy forward when it lags.
// With N routers polling every P seconds at r RU a read, each of the
// StateCopies+1 partitions takes about N·r/(P·StateCopies) RU/s. Fixed,
// so every process agrees.
//
// A copy only ever moves forward (it is replaced on condition of its ETag,
// and only by a newer version), and holds a version the state document
// held; Publish brings every copy forward after its swap, WaitForRouters
// before it counts a version as published (so every router read sent
// after that finds the version, on the state document or on any copy).
const StateCopies = 8

// copyKind is the partition of copy i.
func copyKind(i int) string { return fmt.Sprintf("%s-%d", kindState, i) }

// bucketOf hashes a router id to one of n buckets (FNV-1a): its lease's
// bucket, and the copy of the state it reads.
func bucketOf(router string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(router))
	return int(h.Sum32() % uint32(n))
}

// A Reader reads a database's state for one router: from the copy of the
// state document its router id hashes to, and every StateCopies-th read
// (and whenever asked for a fresh read) from the state document itself. A
// copy found missing, broken or behind the state document is brought
// forward. It never answers a version older than one it answered before
// from a copy that lags (it answers that one again: a read that finds an
// older version on a copy also shows that no newer version was counted
// as published by a waiting change, see StateCopies); the state document
// itself is answered as it is, so a state that went back (deleted and
// created again) shows. A Reader is not safe for concurrent use: a router
// reads under its own lock.
type Reader struct {
	db, coll, kind string
	n              int
	last           *State // the last state answered
	copyKnown      bool   // the copy was read: copyETag and copyVersion say what it holds
	copyETag       string // the copy's ETag, as last read or written ("": missing)
	copyVersion    int64  // the copy's version, as last read or written (0: missing or broken)
}

// NewReader returns a Reader of database dbLink's state for router.
func NewReader(dbLink, router string) (*Reader, error) {
	db, coll, err := names(dbLink)
	if err != nil {
		return nil, err
	}
	return &Reader{db: db, coll: coll, kind: copyKind(bucketOf(router, StateCopies))}, nil
}

// Peek reads the state as Peek does (the resolver is not decoded), from
// the router's copy, or from the state document itself when fresh is set,
// on the first read and on every StateCopies-th. A missing state document
// is ErrNoState (found on a read of the state document itself: a copy
// outlives it until then). Cost: one point read; when the copy is missing
// or behind, a second read and a write to bring it forward.
func (r *Reader) Peek(ctx context.Context, st store.Store, fresh bool) (*State, error) {
	st = retry.Ensure(st)
	r.n++
	if fresh || r.n%StateCopies == 1 {
		return r.primary(ctx, st)
	}
	d, s, err := readCopy(ctx, st, r.db, r.coll, r.kind)
	if err != nil {
		return nil, err
	}
	r.copyKnown, r.copyETag, r.copyVersion = true, "", 0
	if d != nil {
		r.copyETag = d.ETag
	}
	if s != nil {
		r.copyVersion = s.Version
	}
	if s == nil || r.last != nil && s.Version < r.last.Version {
		// Missing, broken or behind: the state document says what it
		// should hold (and primary brings it forward).
		return r.primary(ctx, st)
	}
	r.last = s
	return s, nil
}

// primary reads the state document and brings the router's copy forward
// to it when the copy was last read missing, broken or behind (best
// effort: a copy that cannot be written now is brought forward on a later
// read, by Publish or by WaitForRouters; one that another router moved
// meanwhile is refused by its ETag).
func (r *Reader) primary(ctx context.Context, st store.Store) (*State, error) {
	s, err := Peek(ctx, st, r.db)
	if err != nil {
		return nil, err
	}
	if r.copyKnown && s.Version > r.copyVersion {
		if d, err := writeCopy(ctx, st, r.coll, r.kind, s, r.copyETag, r.copyETag != ""); err == nil {
			r.copyETag, r.copyVersion = d.ETag, s.Version
		}
	}
	r.last = s
	return s, nil
}

// writeCopy writes s as the copy in partition kind: a replace on
// condition of etag when the copy exists (exists), else a create.
func writeCopy(ctx context.Context, st store.Store, coll, kind string, s *State, etag string, exists bool) (*store.Document, error) {
	doc := s.document(kind, kind)
	doc.StateETag = s.ETag
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("shardstate: encoding version %d of %s: %w", s.Version, s.Database, err)
	}
	if exists {
		return st.Replace(ctx, coll, kind, body, &store.WriteOptions{PartitionKey: kind, IfMatch: etag})
	}
	return st.Create(ctx, coll, body, &store.WriteOptions{PartitionKey: kind})
}

// readCopy reads the copy in partition kind: the document (nil when it
// is missing) and the state it holds (nil when it is missing, broken or
// of another database: to be written over, not trusted). Cost: one point
// read.
func readCopy(ctx context.Context, st store.Store, db, coll, kind string) (*store.Document, *State, error) {
	d, err := st.Read(ctx, coll, kind, &store.ReadOptions{PartitionKey: kind})
	switch {
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrCollectionNotFound):
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("shardstate: reading the state of %s (its copy %q): %w", db, kind, err)
	}
	c, _ := parse(d.Body, db, kind, false)
	return d, c, nil
}

// spread brings every copy of the state forward to s (or past it): each
// copy is read and, when missing, broken or older, written on condition
// of what was read, again until it holds s or a newer version. It returns
// nil once every copy does. Cost: StateCopies point reads, and a write
// per copy behind (a second round per copy another writer moved
// meanwhile).
func spread(ctx context.Context, st store.Store, coll string, s *State) error {
	return inParallel(ctx, StateCopies, func(ctx context.Context, i int) error {
		kind := copyKind(i)
		for {
			d, c, err := readCopy(ctx, st, s.Database, coll, kind)
			if err != nil {
				return err
			}
			if c != nil && c.Version >= s.Version {
				return nil
			}
			etag := ""
			if d != nil {
				etag = d.ETag
			}
			_, err = writeCopy(ctx, st, coll, kind, s, etag, d != nil)
			switch {
			case err == nil:
				return nil
			case errors.Is(err, store.ErrPreconditionFailed) || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound):
				continue // moved meanwhile: read it again
			default:
				return fmt.Errorf("shardstate: bringing the copy %q of the state of %s to version %d: %w", kind, s.Database, s.Version, err)
			}
		}
	})
}

// copiesVersion returns the highest version and epoch a copy of the state
// holds (0 when none does): a trace of a fleet, and a floor for a restored
// state. A copy that is broken or of another database is passed over, as
// the routers pass it over: it is brought forward, not trusted. Cost:
// StateCopies point reads.
func copiesVersion(ctx context.Context, st store.Store, db, coll string) (version, epoch int64, err error) {
	found := make([]*State, StateCopies)
	err = inParallel(ctx, StateCopies, func(ctx context.Context, i int) (err error) {
		_, found[i], err = readCopy(ctx, st, db, coll, copyKind(i))
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	for _, s := range found {
		if s != nil {
			version, epoch = max(version, s.Version), max(epoch, s.Epoch)
		}
	}
	return version, epoch, nil
}

// inParallel calls fn for 0 to n-1, at most parallelReads at once, and
// returns the first error (the context fn gets ends with it).
func inParallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallelReads)
	for i := range n {
		g.Go(func() error { return fn(gctx, i) })
	}
	return g.Wait()
}
