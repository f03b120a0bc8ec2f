package memstore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// The durable layout, in one bbolt file:
//
//	"collections"  link -> collMeta (JSON)
//	"d<uid>"       8-byte big-endian seq -> record, one bucket per collection
//	"fences"       database link -> 8-byte big-endian fence epoch
//	"lsnmarks"     "d<uid>" -> 8-byte big-endian LSN: the highest LSN of a
//	               record deleted from the collection (none until one is)
//
// Keys by seq make the bucket's order the feed order (nothing to sort on
// open) and make creates appends to the B+tree's last page, so a commit of
// many creates writes few pages. A collection's bucket is named by its
// uid, so deleting a collection and creating one with the same link never
// mixes their documents. A record holds its document's LSN (change-feed
// position), so Open resumes LSNs above the highest one on disk; the mark
// of deleted records covers a deleted (or expired) document that held the
// highest, so a change-feed position handed out before a restart is never
// reused after it. A record keeps its reshard marks (a copy; a document a
// reshard's clean-up moved out, whose record stays, marked, until its id
// and key are written in the collection again), so feeds read with
// store.ChangeFeedOptions.HideReshard read the same after Open.
var (
	collectionsBucket = []byte("collections")
	fencesBucket      = []byte("fences")
	marksBucket       = []byte("lsnmarks")
)

const dbFile = "docshard.db"

type collMeta struct {
	UID  string               `json:"uid"`
	Spec store.CollectionSpec `json:"spec"`
}

func docsBucket(uid string) []byte { return []byte("d" + uid) }

// errGone is an operation's error when its collection's bucket no longer
// exists (the collection was deleted while the write waited).
var errGone = errors.New("collection deleted")

// errClosed is returned to operations queued after Close began.
var errClosed = errors.New("the store is closed")

// diskOp is one change to the file. The committer applies every queued op in
// one bbolt transaction (one commit, one pair of fsyncs), then reports to
// each waiter: group commit.
type diskOp struct {
	kind   opKind
	bucket []byte
	seq    uint64    // opPut: the key written; opFence: the epoch
	rec    []byte    // opPut: the record
	del    uint64    // opPut, opDelete: a key removed (0: none)
	mark   uint64    // opDelete: the LSN of the record removed, for the collection's mark
	link   []byte    // opCreateColl, opDropColl, opSetColl, opFence (the database link)
	meta   []byte    // opCreateColl, opSetColl
	batch  []*diskOp // opBatch, opSetColl: puts and deletes in bucket, applied all or none
	done   chan error
}

type opKind uint8

const (
	opPut opKind = iota
	opDelete
	opCreateColl
	opDropColl
	opFence
	opBatch
	opSetColl // a collection's new meta, with its records written again (batch)
)

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

func (o *diskOp) apply(tx *bolt.Tx) error {
	switch o.kind {
	case opCreateColl:
		if _, err := tx.CreateBucket(o.bucket); err != nil {
			return err
		}
		return tx.Bucket(collectionsBucket).Put(o.link, o.meta)
	case opDropColl:
		if err := tx.DeleteBucket(o.bucket); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
			return err
		}
		if err := tx.Bucket(marksBucket).Delete(o.bucket); err != nil {
			return err
		}
		return tx.Bucket(collectionsBucket).Delete(o.link)
	case opFence:
		return tx.Bucket(fencesBucket).Put(o.link, seqKey(o.seq))
	case opSetColl:
		if tx.Bucket(o.bucket) == nil {
			return errGone
		}
		if err := tx.Bucket(collectionsBucket).Put(o.link, o.meta); err != nil {
			return err
		}
	}
	b := tx.Bucket(o.bucket)
	if b == nil {
		return errGone
	}
	if o.kind == opBatch || o.kind == opSetColl {
		for _, sub := range o.batch {
			if err := sub.apply(tx); err != nil {
				return err
			}
		}
		return nil
	}
	if o.del != 0 {
		if err := b.Delete(seqKey(o.del)); err != nil {
			return err
		}
	}
	if o.mark != 0 {
		if err := raiseMark(tx, o.bucket, o.mark); err != nil {
			return err
		}
	}
	if o.kind == opPut {
		return b.Put(seqKey(o.seq), o.rec)
	}
	return nil
}

// disk is the durable half of a store: the bbolt file and its committer.
type disk struct {
	db      *bolt.DB
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []*diskOp
	spare   []*diskOp
	closing bool
	stopped chan struct{}
	// readOnly: opened with Options.ReadOnly; submit refuses every write.
	readOnly bool
}

// openDisk opens (creating if needed, unless read-only) the file in dir
// and loads every collection into s. Expired documents are dropped on the
// way. A damaged file is refused with a *CorruptError before bbolt maps
// it, or when bbolt or a record's checksum finds the damage.
func (s *Store) openDisk(dir string) error {
	path := filepath.Join(dir, dbFile)
	ro := s.opts.ReadOnly
	switch _, err := os.Stat(path); {
	case err == nil:
		if err := checkFile(path); err != nil {
			return err
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("memstore: %w", err)
	case ro:
		return fmt.Errorf("memstore: %s: %w (a read-only open creates nothing)", path, os.ErrNotExist)
	default:
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("memstore: %w", err)
		}
	}
	wait := s.opts.LockTimeout
	if wait <= 0 {
		wait = 5 * time.Second
	}
	var db *bolt.DB
	err := guard(path, func() (err error) {
		db, err = bolt.Open(path, 0o600, &bolt.Options{
			Timeout:        wait,
			ReadOnly:       ro,
			NoSync:         s.opts.NoSync,
			NoFreelistSync: true, // fewer pages per commit; rebuilt on open
			FreelistType:   bolt.FreelistMapType,
		})
		return err
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		how := "another process has it open"
		if ro {
			how = "another process has it open for writing"
		}
		return fmt.Errorf("memstore: %s is %w: %s (waited %s for its lock); stop that process, or reach the store through it if it is docshard serve (store: {kind: cosmos, endpoint: ...})", path, ErrLocked, how, wait)
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		return err
	}
	if err != nil {
		if errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrChecksum) || errors.Is(err, bolterrors.ErrVersionMismatch) {
			return &CorruptError{File: path, Reason: err.Error()}
		}
		return fmt.Errorf("memstore: open %s: %w", path, err)
	}
	now := s.clock().Unix()
	load := func(tx *bolt.Tx) error {
		bucket := func(name []byte) (*bolt.Bucket, error) {
			if b := tx.Bucket(name); b != nil || !tx.Writable() {
				return b, nil
			}
			return tx.CreateBucket(name)
		}
		fences, err := bucket(fencesBucket)
		if err != nil {
			return err
		}
		if fences != nil {
			if err := fences.ForEach(s.loadFence); err != nil {
				return err
			}
		}
		meta, err := bucket(collectionsBucket)
		if err != nil {
			return err
		}
		if _, err := bucket(marksBucket); err != nil {
			return err
		}
		if meta == nil {
			return nil
		}
		return meta.ForEach(func(k, v []byte) error {
			return s.loadCollection(db, tx, path, string(k), v, now)
		})
	}
	err = guard(path, func() error {
		if ro {
			return db.View(load)
		}
		return db.Update(load)
	})
	if err != nil {
		_ = db.Close()
		if errors.As(err, &ce) || errors.Is(err, ErrNewerFormat) {
			return err
		}
		return fmt.Errorf("memstore: load %s: %w", path, err)
	}
	d := &disk{db: db, stopped: make(chan struct{}), readOnly: ro}
	d.cond = sync.NewCond(&d.mu)
	s.disk = d
	go d.run()
	return nil
}

// loadCollection adds the collection link to s. A writable store loads
// its documents at once, in tx (which drops expired records and rewrites
// old ones); a read-only store loads them on the collection's first use
// (collection.loaded), in a read transaction of its own, so a command
// that reads one collection of many loads only that one.
func (s *Store) loadCollection(db *bolt.DB, tx *bolt.Tx, file, link string, metaJSON []byte, now int64) error {
	m, path, err := collectionMeta(file, link, metaJSON)
	if err != nil {
		return err
	}
	c := newCollection(link, m.UID, m.Spec, path)
	if tx.Bucket(docsBucket(m.UID)) == nil {
		return &CorruptError{File: file, Reason: fmt.Sprintf("collection %s: its documents bucket is missing", link)}
	}
	s.colls[link] = c
	if tx.Writable() {
		return fillCollection(tx, file, c, now)
	}
	c.lazy = &lazyLoad{fill: func() error {
		return guard(file, func() error {
			return db.View(func(tx *bolt.Tx) error { return fillCollection(tx, file, c, s.clock().Unix()) })
		})
	}}
	return nil
}

// collectionMeta decodes the metadata of the collection link and parses its
// partition-key paths; a *CorruptError says why it could not.
func collectionMeta(file, link string, metaJSON []byte) (collMeta, partitionkey.Paths, error) {
	var m collMeta
	if err := json.Unmarshal(metaJSON, &m); err != nil {
		return m, nil, &CorruptError{File: file, Reason: fmt.Sprintf("collection %s: its metadata does not decode: %v", link, err)}
	}
	path, err := partitionkey.ParsePaths(m.Spec.KeyPaths()...)
	if err != nil {
		return m, path, &CorruptError{File: file, Reason: fmt.Sprintf("collection %s: %v", link, err)}
	}
	return m, path, nil
}

// lazyLoad is a read-only collection's load, run on its first use.
type lazyLoad struct {
	once sync.Once
	err  error
	fill func() error
}

// loaded loads the collection's documents if that is still to do (a
// read-only store's; see loadCollection) and reports why it could not.
func (c *collection) loaded() error {
	if l := c.lazy; l != nil {
		l.once.Do(func() { l.err = l.fill() })
		return l.err
	}
	return nil
}

// fillCollection reads the records of c's bucket into c. In a writable tx
// it also deletes expired records and writes old ones again in the
// current version; read-only, they stay on disk as they are.
func fillCollection(tx *bolt.Tx, file string, c *collection, now int64) error {
	link, bucket := c.link, docsBucket(c.uid)
	b := tx.Bucket(bucket)
	if b == nil {
		return &CorruptError{File: file, Reason: fmt.Sprintf("collection %s: its documents bucket is missing", link)}
	}
	ents, old, err := decodeRecords(b, file, link)
	if err != nil {
		return err
	}
	var live, ghosts, expired, upgraded []*entry
	live = make([]*entry, 0, len(ents))
	maxSeq, maxLSN := uint64(0), mark(tx, bucket)
	for i, e := range ents {
		maxSeq, maxLSN = max(maxSeq, e.seq), max(maxLSN, e.lsn)
		switch {
		case e.expireAt <= now:
			expired = append(expired, e)
			continue
		case old[i]:
			upgraded = append(upgraded, e)
		}
		if e.ghost {
			ghosts = append(ghosts, e)
		} else {
			live = append(live, e)
		}
	}
	maxLSN = giveLSNs(upgraded, maxLSN)
	c.byID = make(map[string]*entry, len(live))
	c.order = make([]*entry, 0, len(live))
	for _, e := range live {
		if c.find(e.id, e.pk) != nil {
			return &CorruptError{File: file, Collection: link, ID: e.id, Key: e.seq, Reason: fmt.Sprintf("the document (key %s) is stored twice", e.pk)}
		}
		c.publish(e) // in seq order: appends
	}
	// The documents a reshard moved out, after the others: publish takes a
	// ghost out of the feed.
	for _, g := range ghosts {
		if c.ghosts[ghostKey(g.id, g.pk)] != nil {
			return &CorruptError{File: file, Collection: link, ID: g.id, Key: g.seq, Reason: fmt.Sprintf("the document (key %s) is stored twice as moved out", g.pk)}
		}
		g.dead = true
		c.changes.insert(g)
		c.keepGhost(g)
	}
	if !tx.Writable() { // read-only: expired documents stay on disk, old records as they are
		c.nextSeq.Store(maxSeq + 1)
		c.lsns.last.Store(maxLSN)
		return nil
	}
	gone := uint64(0)
	for _, e := range expired {
		if err := b.Delete(seqKey(e.seq)); err != nil {
			return err
		}
		gone = max(gone, e.lsn)
	}
	if err := raiseMark(tx, bucket, gone); err != nil {
		return err
	}
	for _, e := range upgraded { // in the transaction that loads them
		if err := b.Put(seqKey(e.seq), encodeRecord(e, e.marks())); err != nil {
			return err
		}
	}
	c.nextSeq.Store(maxSeq + 1)
	c.lsns.last.Store(maxLSN)
	return nil
}

// giveLSNs gives each entry of ents that has no LSN (a record older than
// the change feed) the next one after last, in the order of their last
// write (_ts), then of creation (seq: ents is in seq order), and returns
// the last LSN given (last when none was).
func giveLSNs(ents []*entry, last uint64) uint64 {
	var noLSN []*entry
	for _, e := range ents {
		if e.lsn == 0 {
			noLSN = append(noLSN, e)
		}
	}
	sort.SliceStable(noLSN, func(i, j int) bool { return noLSN[i].ts < noLSN[j].ts })
	for _, e := range noLSN {
		last++
		e.lsn = last
	}
	return last
}

// decodeRecords reads every record of a collection's bucket, in key (seq)
// order. The records are decoded (checksum, fields, a copy of the body) in
// parallel, GOMAXPROCS goroutines over the bucket's bytes, which stay
// mapped while the transaction is open; the first bad record in key order
// is the error.
func decodeRecords(b *bolt.Bucket, file, link string) (ents []*entry, old []bool, err error) {
	type rec struct{ k, v []byte }
	var recs []rec
	if err = b.ForEach(func(k, v []byte) error { recs = append(recs, rec{k, v}); return nil }); err != nil {
		return nil, nil, err
	}
	ents, old = make([]*entry, len(recs)), make([]bool, len(recs))
	err = guardedParallel(file, len(recs), 1024, func(lo, hi int) (err error) {
		for i := lo; i < hi; i++ {
			if ents[i], old[i], err = readRecord(file, link, recs[i].k, recs[i].v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return ents, old, nil
}

// readRecord decodes the record at key k of the collection link's bucket
// (see decodeRecord), with its seq; a *CorruptError names a bad key or
// record, an error wrapping ErrNewerFormat a record of a newer version.
func readRecord(file, link string, k, v []byte) (*entry, bool, error) {
	if len(k) != 8 {
		return nil, false, &CorruptError{File: file, Collection: link, Reason: fmt.Sprintf("a record's key %x is not 8 bytes", k)}
	}
	seq := binary.BigEndian.Uint64(k)
	e, old, err := decodeRecord(v)
	if errors.Is(err, errNewerRecord) {
		return nil, false, fmt.Errorf("memstore: %s: collection %s, record %d: record format version %d, and this docshard reads versions %d to %d: %w; "+
			"open the store with the docshard that wrote it (or a newer one)", file, link, seq, v[0], recordVersionV2, recordVersionMarks, ErrNewerFormat)
	}
	if err != nil {
		return nil, false, recordError(file, link, seq, e, err)
	}
	e.seq = seq
	return e, old, nil
}

// inParallel runs fn over [0, n) split into contiguous parts, one a
// goroutine: GOMAXPROCS of them when each gets at least per items, fewer
// for less (one, on the caller's goroutine, for under per). Each part stops
// at its first error, and the first error in order is returned.
func inParallel(n, per int, fn func(lo, hi int) error) error {
	workers := min(runtime.GOMAXPROCS(0), 1+n/per)
	if workers <= 1 {
		return fn(0, n)
	}
	errs := make([]error, workers)
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { errs[w] = fn(min(w*chunk, n), min((w+1)*chunk, n)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// guardedParallel is inParallel over bytes of the mapped file: each part
// runs under guard on its own goroutine, since a memory fault is turned
// into a panic only on the goroutine that asked for it
// (debug.SetPanicOnFault), and a panic on a worker would end the process
// instead of reaching the caller's guard.
func guardedParallel(file string, n, per int, fn func(lo, hi int) error) error {
	return inParallel(n, per, func(lo, hi int) error {
		return guard(file, func() error { return fn(lo, hi) })
	})
}

// mark returns the collection's mark: the highest LSN of a record deleted
// from it, 0 when none was.
func mark(tx *bolt.Tx, bucket []byte) uint64 {
	marks := tx.Bucket(marksBucket)
	if marks == nil { // a file opened read-only from before the marks
		return 0
	}
	if v := marks.Get(bucket); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// raiseMark sets the collection's mark to lsn if that is higher.
func raiseMark(tx *bolt.Tx, bucket []byte, lsn uint64) error {
	if lsn <= mark(tx, bucket) {
		return nil
	}
	return tx.Bucket(marksBucket).Put(bucket, seqKey(lsn))
}

// run is the committer: it takes everything queued, applies it in one
// transaction and reports to the waiters, until Close.
func (d *disk) run() {
	defer close(d.stopped)
	var errs []error
	for {
		d.mu.Lock()
		for len(d.queue) == 0 && !d.closing {
			d.cond.Wait()
		}
		batch := d.queue
		d.queue, d.spare = d.spare[:0], nil
		closing := d.closing
		d.mu.Unlock()
		if len(batch) == 0 && closing {
			return
		}
		if cap(errs) < len(batch) {
			errs = make([]error, len(batch))
		}
		errs = errs[:len(batch)]
		clear(errs)
		err := d.db.Update(func(tx *bolt.Tx) error {
			for i, o := range batch {
				errs[i] = o.apply(tx)
				if errs[i] != nil && (o.kind == opBatch || o.kind == opSetColl) && !errors.Is(errs[i], errGone) {
					// Part of it may be applied: roll back everything
					// rather than commit part of a batch.
					return errs[i]
				}
			}
			return nil
		})
		for i, o := range batch {
			if err != nil {
				errs[i] = err
			}
			if o.done != nil {
				o.done <- errs[i]
			}
			batch[i] = nil
		}
		d.mu.Lock()
		d.spare = batch[:0]
		d.mu.Unlock()
	}
}

// submit queues o; with wait it blocks until o is on disk.
func (d *disk) submit(o *diskOp, wait bool) error {
	if wait {
		o.done = make(chan error, 1)
	}
	if d.readOnly {
		return ErrReadOnly
	}
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return errClosed
	}
	d.queue = append(d.queue, o)
	d.mu.Unlock()
	d.cond.Signal()
	if !wait {
		return nil
	}
	return <-o.done
}

// close commits what is queued, stops the committer and closes the file.
func (d *disk) close() error {
	d.mu.Lock()
	d.closing = true
	d.mu.Unlock()
	d.cond.Signal()
	<-d.stopped
	return d.db.Close()
}

// A record: format version, a CRC-32C of everything after it (since
// version 5), _ts, expiry, LSN (since version 4), the reshard marks (one
// byte, in version 6 only: markCopy, markMoved), etag, id, key text, then
// the stored JSON text to the end. The key text is the value's identity text
// (partitionkey.IdentityText) since version 3; version 2 held
// store.KeyText as it was before (encoding/json's strings, strconv's 'g'
// numbers such as 1e-07). Records of versions 2 to 4 are converted when the
// file is opened for writing: their key text, an LSN each, a checksum. A
// record without marks is written in version 5 (recordVersion), one with
// marks in version 6 (recordVersionMarks), so a store whose documents
// carry none stays readable by a docshard that reads up to version 5; a
// record of a version above 6 is refused with ErrNewerFormat.
const (
	recordVersionMarks = 6 // the newest
	recordVersion      = 5
	recordVersionV4    = 4
	recordVersionV3    = 3
	recordVersionV2    = 2
	recordCRCBytes     = 4
)

// The reshard marks a record keeps (version 6): see entry.quiet and
// entry.ghost.
const (
	markCopy  byte = 1 << iota // a reshard's copy (entry.quiet)
	markMoved                  // a document a reshard's clean-up moved out (entry.ghost)
	markAll   = markCopy | markMoved
)

// ErrNewerFormat matches (errors.Is) the error of Open and Salvage for a
// durable store holding a record of a format version newer than this
// docshard reads: a newer docshard wrote it. The error names the file,
// the collection, the record and its version; nothing is changed. Open
// the store with the docshard that wrote it (or a newer one).
var ErrNewerFormat = errors.New("written by a newer docshard")

// errNewerRecord is decodeRecord's error for a record of a version above
// recordVersionMarks; readRecord names it with ErrNewerFormat.
var errNewerRecord = errors.New("a newer record version")

// marks returns the reshard marks of e for its record. Caller holds the
// collection's lock, or e is not published.
func (e *entry) marks() byte {
	var m byte
	if e.quiet {
		m |= markCopy
	}
	if e.ghost {
		m |= markMoved
	}
	return m
}

// encodeRecord returns e's record with the reshard marks given (e.marks()
// for its own): version 6 with marks, version 5 without.
func encodeRecord(e *entry, marks byte) []byte {
	b := make([]byte, 1+recordCRCBytes, len(e.body)+len(e.etag)+len(e.id)+len(e.pk)+37)
	b[0] = recordVersion
	b = binary.AppendVarint(b, e.ts)
	b = binary.AppendVarint(b, e.expireAt)
	b = binary.AppendUvarint(b, e.lsn)
	if marks != 0 {
		b[0] = recordVersionMarks
		b = append(b, marks)
	}
	for _, s := range [...]string{e.etag, e.id, e.pk} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = append(b, e.body...)
	binary.BigEndian.PutUint32(b[1:], crc32.Checksum(b[1+recordCRCBytes:], crcTable))
	return b
}

// errRecord is a record that does not decode; badSum one whose checksum
// does not match (its fields may still read, and name the document).
var (
	errRecord = errors.New("the record does not decode")
	errSum    = errors.New("its checksum does not match: the stored bytes changed after they were written")
)

// decodeRecord reads a record; the body is copied out of bbolt's memory.
// old reports a record of a version before 5 (2 to 4), which the caller
// writes again in the current one; a record of version 2 or 3 has no LSN
// (0), and the caller gives it one. A record of version 6 sets the
// entry's reshard marks (quiet, ghost). A record whose checksum fails
// returns errSum with the entry as far as it decodes, for its id; one of
// a version above recordVersionMarks, errNewerRecord.
func decodeRecord(rec []byte) (e *entry, old bool, err error) {
	bad := errRecord
	if len(rec) > 0 && rec[0] > recordVersionMarks {
		return nil, false, errNewerRecord
	}
	if len(rec) == 0 || rec[0] < recordVersionV2 {
		return nil, false, bad
	}
	version := rec[0]
	old = version < recordVersion
	r := rec[1:]
	var sum []byte
	if !old {
		if len(r) < recordCRCBytes {
			return nil, false, bad
		}
		sum, r = r[:recordCRCBytes], r[recordCRCBytes:]
	}
	e = &entry{heapIdx: -1}
	var n int
	if e.ts, n = binary.Varint(r); n <= 0 {
		return nil, false, bad
	}
	r = r[n:]
	if e.expireAt, n = binary.Varint(r); n <= 0 {
		return nil, false, bad
	}
	r = r[n:]
	if version >= recordVersionV4 {
		if e.lsn, n = binary.Uvarint(r); n <= 0 || e.lsn == 0 {
			return nil, false, bad
		}
		r = r[n:]
	}
	if version >= recordVersionMarks {
		if len(r) == 0 || r[0]&^markAll != 0 {
			return nil, false, bad
		}
		e.quiet, e.ghost = r[0]&markCopy != 0, r[0]&markMoved != 0
		r = r[1:]
	}
	var strs [3]string
	for i := range strs {
		l, n := binary.Uvarint(r)
		if n <= 0 || uint64(len(r)-n) < l {
			return nil, false, bad
		}
		strs[i] = string(r[n : n+int(l)])
		r = r[n+int(l):]
	}
	e.etag, e.id, e.pk = strs[0], strs[1], strs[2]
	if sum != nil && binary.BigEndian.Uint32(sum) != crc32.Checksum(rec[1+recordCRCBytes:], crcTable) {
		return e, false, errSum
	}
	if e.id == "" || e.pk == "" || len(r) < 2 || r[0] != '{' {
		return e, false, bad
	}
	if version == recordVersionV2 {
		if e.pk, err = upgradeKeyText(e.pk); err != nil {
			return e, false, fmt.Errorf("%w: key text: %w", errRecord, err)
		}
	}
	e.pkHash = keyHash(e.pk)
	e.body = make([]byte, len(r))
	copy(e.body, r) // make+copy: the compiler skips zeroing (append([]byte(nil), r...) clears)
	return e, old, nil
}

// upgradeKeyText converts the key text of a version-2 record to the
// identity text of the same value: NoneText stays; every other old text is
// JSON (a string, a number, true, false or null), read and written again.
func upgradeKeyText(text string) (string, error) {
	if text == store.NoneText {
		return text, nil
	}
	v, err := partitionkey.RawValueOf([]byte(text))
	if err != nil {
		return "", err
	}
	out, err := v.AppendIdentity(nil)
	return string(out), err
}
