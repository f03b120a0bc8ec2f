package memstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/store"
)

// Options configure a store. A nil *Options means defaults.
type Options struct {
	// Clock returns the current time, for _ts and TTL; nil means
	// time.Now. Tests inject a fake clock to expire documents.
	Clock func() time.Time
	// PageSize is the page size of queries and feeds when the caller gives
	// no hint; 0 means 100.
	PageSize int
	// Cursors is how many paged query results are kept for their
	// continuation tokens; 0 means 64. An evicted cursor costs a re-run.
	Cursors int
	// NoSync skips fsync in durable mode (bbolt's NoSync): faster, and an
	// acknowledged write can be lost in a machine crash (not in a process
	// crash). For tests and bulk loads.
	NoSync bool
}

// Store is the embedded store.
type Store struct {
	opts    Options
	clock   func() time.Time
	db      *bolt.DB // nil in memory
	mu      sync.RWMutex
	colls   map[string]*collection // by canonical link
	closed  atomic.Bool
	etagSeq atomic.Uint64
	etagPfx string
	locks   [256]sync.Mutex // per-document write locks, by key hash
	cursors *cursor.Cache[[]json.RawMessage]
}

var _ store.Store = (*Store)(nil)

// New returns an empty in-memory store.
func New(opts *Options) *Store {
	s := newStore(opts)
	return s
}

func newStore(opts *Options) *Store {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	if o.Cursors <= 0 {
		o.Cursors = 64
	}
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	return &Store{
		opts:    o,
		clock:   o.Clock,
		colls:   map[string]*collection{},
		etagPfx: hex.EncodeToString(pfx[:]),
		cursors: cursor.NewCache[[]json.RawMessage](o.Cursors),
	}
}

// Open opens (creating if needed) a durable store in dir. It loads every
// collection and document into memory. Only one process may open a
// directory at a time; a second Open waits up to 5 seconds, then fails.
func Open(dir string, opts *Options) (*Store, error) {
	s := newStore(opts)
	if err := s.open(dir); err != nil {
		return nil, err
	}
	return s, nil
}

// Close releases the store. Operations after Close fail with
// store.ErrUnavailable.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.db != nil {
		return s.db.Close()
	}
	return nil
}

func (s *Store) checkOpen(op, link string) error {
	if s.closed.Load() {
		return &store.Error{Kind: store.ErrUnavailable, Op: op, Link: link, Message: "the store is closed"}
	}
	return nil
}

// begin checks that the store is open and ctx is live, and returns the
// canonical form of the collection link.
func (s *Store) begin(ctx context.Context, op, l string) (string, error) {
	if err := s.checkOpen(op, l); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return canonLink(op, l)
}

// canonLink validates a collection link and returns its canonical form.
func canonLink(op, l string) (string, error) {
	c, err := link.Canonical(l)
	if err != nil {
		return "", &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	return c, nil
}

// collection finds a collection or reports store.ErrCollectionNotFound.
func (s *Store) collection(op, l string) (*collection, error) {
	if err := s.checkOpen(op, l); err != nil {
		return nil, err
	}
	key, err := canonLink(op, l)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	c := s.colls[key]
	s.mu.RUnlock()
	if c == nil {
		return nil, &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: l}
	}
	return c, nil
}

// CreateCollection creates a collection; an existing one wraps
// store.ErrConflict.
func (s *Store) CreateCollection(ctx context.Context, l string, spec *store.CollectionSpec) error {
	const op = "create collection"
	key, err := s.begin(ctx, op, l)
	if err != nil {
		return err
	}
	var sp store.CollectionSpec
	if spec != nil {
		sp = *spec
	}
	path, err := store.ParsePartitionKeyPath(sp.PartitionKeyPath)
	if err != nil {
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	if sp.DefaultTTL != nil && (*sp.DefaultTTL == 0 || *sp.DefaultTTL < -1) {
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: fmt.Sprintf("defaultTtl %d: want -1 or a positive number of seconds (nil for off)", *sp.DefaultTTL)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.colls[key]; ok {
		return &store.Error{Kind: store.ErrConflict, Op: op, Link: l, Message: "the collection exists"}
	}
	c := newCollection(key, sp, path)
	if s.db != nil {
		if err := s.persistCollection(c); err != nil {
			return &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l, Err: err}
		}
	}
	s.colls[key] = c
	return nil
}

// DeleteCollection deletes a collection and its documents.
func (s *Store) DeleteCollection(ctx context.Context, l string) error {
	const op = "delete collection"
	key, err := s.begin(ctx, op, l)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.colls[key]
	if !ok {
		return &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: l}
	}
	if s.db != nil {
		if err := s.dropCollection(key); err != nil {
			return &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l, Err: err}
		}
	}
	c.mu.Lock()
	c.dropped = true
	c.mu.Unlock()
	delete(s.colls, key)
	return nil
}

// ListCollections returns a database's collection links, sorted.
func (s *Store) ListCollections(ctx context.Context, dbLink string) ([]string, error) {
	const op = "list collections"
	if err := s.checkOpen(op, dbLink); err != nil {
		return nil, err
	}
	db, err := link.ParseDatabase(dbLink)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: dbLink, Err: err}
	}
	prefix := "dbs/" + db + "/colls/"
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []string{}
	for k := range s.colls {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// CollectionInfo returns a collection's spec and usage: the documents that
// have not expired and the bytes of their stored JSON.
func (s *Store) CollectionInfo(ctx context.Context, l string) (*store.CollectionInfo, error) {
	c, err := s.collection("collection info", l)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	c.mu.RLock()
	defer c.mu.RUnlock()
	info := &store.CollectionInfo{Link: c.link, Spec: c.spec}
	for _, e := range c.order {
		if e.deleted || c.expired(e, now) {
			continue
		}
		info.Documents++
		info.Bytes += int64(len(e.body))
	}
	return info, nil
}

func (s *Store) newETag() string {
	return fmt.Sprintf(`"%s-%x"`, s.etagPfx, s.etagSeq.Add(1))
}

// lockDoc serialises writers of one document.
func (s *Store) lockDoc(coll, key string) func() {
	h := uint32(2166136261)
	for i := 0; i < len(coll); i++ {
		h = (h ^ uint32(coll[i])) * 16777619
	}
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	m := &s.locks[h%uint32(len(s.locks))]
	m.Lock()
	return m.Unlock
}
