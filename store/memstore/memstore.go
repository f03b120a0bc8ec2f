package memstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/store"
)

// Options configure a store. A nil *Options means defaults.
type Options struct {
	// Clock returns the current time, for "_ts" and TTL; nil means
	// time.Now. Tests inject a settable clock to expire documents.
	Clock func() time.Time
	// PageSize is the most items a query or feed page holds when the
	// caller gives no hint; 0 means 100 (Cosmos DB's default).
	PageSize int
	// MaxPageBytes caps a page's items by their total size, as Cosmos DB
	// caps a response at 4 MB; a page always holds at least one item. 0
	// means 4 MiB.
	MaxPageBytes int
	// Cursors is how many paged query results are kept for their
	// continuation tokens, least recently used out first; 0 means 256. A
	// token whose cursor was evicted costs a re-run of the query.
	Cursors int
	// CursorBytes bounds what those results hold in all (their JSON, as
	// the store measures it), least recently used out first; 0 means
	// 64 MiB. A result larger than the bound is not kept: each of its
	// pages re-runs the query.
	CursorBytes int64
	// NoSync skips fsync in durable mode (bbolt's NoSync): faster, and
	// acknowledged writes survive a process crash but not a machine crash.
	// For tests and bulk loads.
	NoSync bool
	// LockTimeout is how long Open waits for another process to release
	// the directory before failing with ErrLocked; 0 means 5 seconds. A
	// server that must say at once that the directory is taken (docshard
	// serve) sets a short one; a command that may start while another
	// finishes waits the default.
	LockTimeout time.Duration
	// ReadOnly opens a durable store without writing to it: bbolt's shared
	// lock, so any number of read-only openers share the directory (one
	// that another process holds for writing still waits LockTimeout, then
	// fails with ErrLocked). Nothing is created, expired documents stay in
	// the file (they are hidden as usual), and every write fails with
	// store.ErrBadRequest wrapping ErrReadOnly. A collection's documents
	// are loaded on its first use, not by Open (see the package's
	// Durability section). Ignored in memory.
	ReadOnly bool
}

// ErrReadOnly is wrapped by every write to a store opened with
// Options.ReadOnly.
var ErrReadOnly = errors.New("the store is open read-only")

// ErrLocked is what Open returns (wrapped, with the file's path) when
// another process holds the directory: one process at a time may open it.
var ErrLocked = errors.New("held by another process")

// Store is the embedded store. It is safe for concurrent use.
type Store struct {
	opts    Options
	clock   func() time.Time
	mu      sync.RWMutex           // guards colls
	colls   map[string]*collection // by canonical link
	admin   sync.Mutex             // serialises collection creates and deletes
	closed  atomic.Bool
	etagPfx string
	etagSeq atomic.Uint64
	seed    maphash.Seed
	locks   [1024]sync.Mutex // document write locks, by hash of (collection, key, id)
	cursors *cursor.Cache[*resultSet]
	progs   *programs // compiled queries by text
	disk    *disk     // nil in memory
	fenceMu sync.Mutex
	fences  map[string]*dbFence // by database link; see fence.go
}

var _ store.Store = (*Store)(nil)

// New returns an empty in-memory store.
func New(opts *Options) *Store {
	o := opt.Of(opts)
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	if o.MaxPageBytes <= 0 {
		o.MaxPageBytes = 4 << 20
	}
	if o.Cursors <= 0 {
		o.Cursors = 256
	}
	if o.CursorBytes <= 0 {
		o.CursorBytes = 64 << 20
	}
	return &Store{
		opts:    o,
		clock:   o.Clock,
		colls:   map[string]*collection{},
		etagPfx: randomHex(4),
		seed:    maphash.MakeSeed(),
		cursors: cursor.NewSizedCache(o.Cursors, o.CursorBytes, (*resultSet).bytes),
		progs:   newPrograms(256),
	}
}

// Open opens a durable store in dir, creating the directory and its
// database file (dir/docshard.db) if needed, and loads every collection
// and document into memory (documents that have expired are dropped). One
// process at a time may open a directory: Open waits up to
// Options.LockTimeout (5 seconds) for another to close it, then fails with
// an error wrapping ErrLocked that names the file. A file a newer docshard
// wrote records to that this one cannot read is refused, unchanged, with
// an error wrapping ErrNewerFormat that names the file and the version.
func Open(dir string, opts *Options) (*Store, error) {
	s := New(opts)
	if err := s.openDisk(dir); err != nil {
		return nil, err
	}
	return s, nil
}

// Close releases the store: in durable mode it waits for queued writes to
// commit, then closes the file. Operations after Close fail with
// store.ErrUnavailable; Close again is a no-op.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.disk != nil {
		return s.disk.close()
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// begin checks that the store is open and ctx is live, and returns the
// canonical form of the collection link.
func (s *Store) begin(ctx context.Context, op, l string) (string, error) {
	return s.beginWith(ctx, op, l, link.Canonical)
}

// beginDatabase checks that the store is open and ctx is live, and returns
// the canonical form of a database link ("dbs/{db}").
func (s *Store) beginDatabase(ctx context.Context, op, databaseLink string) (string, error) {
	return s.beginWith(ctx, op, databaseLink, func(l string) (string, error) {
		db, err := link.ParseDatabase(l)
		return "dbs/" + db, err
	})
}

// beginWith checks that the store is open and ctx is live, and returns the
// canonical form of l by canonical.
func (s *Store) beginWith(ctx context.Context, op, l string, canonical func(string) (string, error)) (string, error) {
	if s.closed.Load() {
		return "", &store.Error{Kind: store.ErrClosed, Op: op, Link: l}
	}
	if err := ctx.Err(); err != nil {
		return "", &store.Error{Op: op, Link: l, Err: err}
	}
	c, err := canonical(l)
	if err != nil {
		return "", &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	return c, nil
}

// collection finds an open collection.
func (s *Store) collection(ctx context.Context, op, l string) (*collection, error) {
	key, err := s.begin(ctx, op, l)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	c := s.colls[key]
	s.mu.RUnlock()
	if c == nil {
		return nil, &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: l}
	}
	if err := c.loaded(); err != nil {
		return nil, &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l, Message: "its documents cannot be loaded", Err: err}
	}
	return c, nil
}

// CreateCollection creates a collection; see store.Collections. The spec
// is checked and normalised by store.CheckSpec (an empty PartitionKeyPath
// is stored as "/id"). In durable mode it returns once the collection is
// on disk.
func (s *Store) CreateCollection(ctx context.Context, l string, spec *store.CollectionSpec) error {
	const op = "create collection"
	key, err := s.begin(ctx, op, l)
	if err != nil {
		return err
	}
	sp, path, err := store.CheckSpec(spec)
	if err != nil {
		return withOp(err, op, l)
	}
	s.admin.Lock()
	defer s.admin.Unlock()
	s.mu.RLock()
	exists := s.colls[key] != nil
	s.mu.RUnlock()
	if exists {
		return store.Errorf(store.ErrConflict, op, l, "", "the collection exists")
	}
	c := newCollection(key, randomHex(8), sp, path)
	if s.disk != nil {
		meta, _ := json.Marshal(collMeta{UID: c.uid, Spec: sp})
		o := &diskOp{kind: opCreateColl, bucket: docsBucket(c.uid), link: []byte(key), meta: meta}
		if err := s.disk.submit(o, true); err != nil {
			return s.diskErr(op, l, "", err)
		}
	}
	s.mu.Lock()
	s.colls[key] = c
	s.mu.Unlock()
	return nil
}

// DeleteCollection deletes a collection and its documents; see
// store.Collections.
func (s *Store) DeleteCollection(ctx context.Context, l string) error {
	const op = "delete collection"
	key, err := s.begin(ctx, op, l)
	if err != nil {
		return err
	}
	s.admin.Lock()
	defer s.admin.Unlock()
	s.mu.RLock()
	c := s.colls[key]
	s.mu.RUnlock()
	if c == nil {
		return &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: l}
	}
	if s.disk != nil {
		o := &diskOp{kind: opDropColl, bucket: docsBucket(c.uid), link: []byte(key)}
		if err := s.disk.submit(o, true); err != nil {
			return s.diskErr(op, l, "", err)
		}
	}
	s.mu.Lock()
	delete(s.colls, key)
	s.mu.Unlock()
	c.mu.Lock()
	c.dropped = true
	c.mu.Unlock()
	return nil
}

// ListCollections returns a database's collection links, sorted; see
// store.Collections. It costs a pass over every collection of the store.
func (s *Store) ListCollections(ctx context.Context, dbLink string) ([]string, error) {
	db, err := s.beginDatabase(ctx, "list collections", dbLink)
	if err != nil {
		return nil, err
	}
	prefix := db + "/colls/"
	out := []string{}
	s.mu.RLock()
	for k := range s.colls {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	s.mu.RUnlock()
	sort.Strings(out)
	return out, nil
}

// CollectionInfo returns a collection's spec (its quota included, which
// writes are held to) and its usage: the documents that have not expired
// and the bytes of their stored JSON text (system properties included). Usage is kept as documents are written, so this
// costs no scan.
func (s *Store) CollectionInfo(ctx context.Context, l string) (*store.CollectionInfo, error) {
	c, err := s.collection(ctx, "collection info", l)
	if err != nil {
		return nil, err
	}
	now := s.clock().Unix()
	c.mu.Lock()
	s.purgeLocked(c, now, math.MaxInt)
	info := &store.CollectionInfo{Link: c.link, Documents: c.docs, Bytes: c.bytes}
	c.mu.Unlock()
	info.Spec = cloneSpec(c.spec())
	return info, nil
}

// cloneSpec returns a deep copy of a spec that CheckSpec accepted, so a
// caller may modify what it is given.
func cloneSpec(sp *store.CollectionSpec) store.CollectionSpec {
	cp, _, _ := store.CheckSpec(sp)
	return cp
}

// purge removes the expired documents of c if any are due, taking the
// collection lock only then.
func (s *Store) purge(c *collection, now int64) {
	if c.nextExpiry.Load() > now {
		return
	}
	c.mu.Lock()
	s.purgeLocked(c, now, math.MaxInt)
	c.mu.Unlock()
}

// purgeLocked removes up to limit expired documents; in durable mode it
// queues their deletion without waiting (a crash before it commits only
// leaves them for the next Open to drop). Caller holds c.mu for writing.
func (s *Store) purgeLocked(c *collection, now int64, limit int) {
	if c.nextExpiry.Load() > now {
		return
	}
	gone := c.purge(now, limit, func(e *entry) (func(), bool) {
		m := s.lockFor(c, e.pk, e.id)
		if !m.TryLock() {
			return nil, false
		}
		return m.Unlock, true
	})
	if s.disk == nil || len(gone) == 0 {
		return
	}
	for _, e := range gone {
		_ = s.disk.submit(deleteOp(c, e, false), false)
	}
}

// newETag returns a fresh ETag, quoted as Cosmos DB writes them: a random
// prefix per store instance (so ETags never repeat across restarts) and a
// counter.
func (s *Store) newETag() string {
	b := make([]byte, 0, 2+len(s.etagPfx)+1+16)
	b = append(b, '"')
	b = append(b, s.etagPfx...)
	b = append(b, '-')
	b = strconv.AppendUint(b, s.etagSeq.Add(1), 16)
	b = append(b, '"')
	return string(b)
}

// lockFor returns the write lock of a document: writers of one document
// hold it from reading the current version to publishing the next, so
// their preconditions and sequence numbers never race.
func (s *Store) lockFor(c *collection, pk, id string) *sync.Mutex {
	return &s.locks[s.lockIndex(c, pk, id)]
}

// lockIndex is the index in s.locks of a document's write lock.
func (s *Store) lockIndex(c *collection, pk, id string) int {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(c.uid)
	h.WriteString(pk)
	h.WriteByte(0)
	h.WriteString(id)
	return int(h.Sum64() % uint64(len(s.locks)))
}

// diskErr maps a durable-write failure to a store error.
func (s *Store) diskErr(op, l, id string, err error) error {
	switch {
	case errors.Is(err, errGone):
		return &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: l, ID: id}
	case errors.Is(err, errClosed):
		return &store.Error{Kind: store.ErrClosed, Op: op, Link: l, ID: id}
	case errors.Is(err, ErrReadOnly):
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, ID: id, Err: ErrReadOnly}
	}
	return &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l, ID: id, Message: fmt.Sprintf("writing to disk: %v", err), Err: err}
}
