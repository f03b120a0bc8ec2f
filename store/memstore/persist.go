package memstore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/docshard/docshard/store"
)

// The durable layout: bucket "collections" maps a link to its spec; bucket
// "c/<link>" maps document keys to records.
var collectionsBucket = []byte("collections")

func docsBucket(link string) []byte { return []byte("c/" + link) }

// errGone is returned by a batched write whose collection was deleted.
var errGone = errors.New("collection deleted")

func (s *Store) open(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	path := filepath.Join(dir, "docshard.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoSync: s.opts.NoSync})
	if err != nil {
		return fmt.Errorf("memstore: open %s: %w", path, err)
	}
	// Group commit: concurrent writers wait at most this long to share a
	// transaction (and its fsync).
	db.MaxBatchDelay = time.Millisecond
	db.MaxBatchSize = 512
	s.db = db
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(collectionsBucket)
		if err != nil {
			return err
		}
		return meta.ForEach(func(k, v []byte) error {
			var spec store.CollectionSpec
			if err := json.Unmarshal(v, &spec); err != nil {
				return fmt.Errorf("collection %s: corrupt spec: %w", k, err)
			}
			segs, err := store.ParsePartitionKeyPath(spec.PartitionKeyPath)
			if err != nil {
				return err
			}
			c := newCollection(string(k), spec, segs)
			b := tx.Bucket(docsBucket(c.link))
			if b == nil {
				return fmt.Errorf("collection %s: documents bucket missing", k)
			}
			maxSeq := uint64(0)
			err = b.ForEach(func(key, rec []byte) error {
				e, err := decodeRecord(string(key), rec)
				if err != nil {
					return fmt.Errorf("collection %s: %w", k, err)
				}
				c.docs[e.key] = e
				c.byID[e.id] = append(c.byID[e.id], e.key)
				c.order = append(c.order, e)
				maxSeq = max(maxSeq, e.seq)
				return nil
			})
			if err != nil {
				return err
			}
			sort.Slice(c.order, func(i, j int) bool { return c.order[i].seq < c.order[j].seq })
			c.nextSeq.Store(maxSeq + 1)
			s.colls[c.link] = c
			return nil
		})
	})
	if err != nil {
		db.Close()
		return fmt.Errorf("memstore: load %s: %w", path, err)
	}
	return nil
}

func (s *Store) persistCollection(c *collection) error {
	spec, err := json.Marshal(c.spec)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket(docsBucket(c.link)); err != nil {
			return err
		}
		return tx.Bucket(collectionsBucket).Put([]byte(c.link), spec)
	})
}

func (s *Store) dropCollection(link string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(docsBucket(link)); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
			return err
		}
		return tx.Bucket(collectionsBucket).Delete([]byte(link))
	})
}

// persistPut writes a record; concurrent calls share a transaction.
func (s *Store) persistPut(c *collection, e *entry) error {
	rec := encodeRecord(e)
	return s.db.Batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(docsBucket(c.link))
		if b == nil {
			return errGone
		}
		return b.Put([]byte(e.key), rec)
	})
}

func (s *Store) persistDelete(c *collection, key string) error {
	return s.db.Batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(docsBucket(c.link))
		if b == nil {
			return errGone
		}
		return b.Delete([]byte(key))
	})
}

func (s *Store) persistErr(op, linkText, id string, err error) error {
	if errors.Is(err, errGone) {
		return &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: linkText, ID: id}
	}
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) || s.closed.Load() {
		return &store.Error{Kind: store.ErrUnavailable, Op: op, Link: linkText, ID: id, Message: "the store is closed"}
	}
	return &store.Error{Kind: store.ErrUnavailable, Op: op, Link: linkText, ID: id, Err: err}
}

// A record: version 1, seq, ts, etag, ttl flag and value, id, pk, body.
func encodeRecord(e *entry) []byte {
	b := make([]byte, 0, len(e.body)+len(e.etag)+len(e.id)+len(e.pk)+40)
	b = append(b, 1)
	b = binary.AppendUvarint(b, e.seq)
	b = binary.AppendVarint(b, e.ts)
	b = binary.AppendUvarint(b, uint64(len(e.etag)))
	b = append(b, e.etag...)
	if e.hasTTL {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendVarint(b, e.ttl)
	b = binary.AppendUvarint(b, uint64(len(e.id)))
	b = append(b, e.id...)
	b = binary.AppendUvarint(b, uint64(len(e.pk)))
	b = append(b, e.pk...)
	return append(b, e.body...)
}

func decodeRecord(key string, rec []byte) (*entry, error) {
	fail := func() (*entry, error) { return nil, fmt.Errorf("corrupt record for key %q", key) }
	if len(rec) == 0 || rec[0] != 1 {
		return fail()
	}
	r := rec[1:]
	e := &entry{key: key}
	var n int
	var u uint64
	if e.seq, n = binary.Uvarint(r); n <= 0 {
		return fail()
	}
	r = r[n:]
	if e.ts, n = binary.Varint(r); n <= 0 {
		return fail()
	}
	r = r[n:]
	str := func() (string, bool) {
		if u, n = binary.Uvarint(r); n <= 0 || uint64(len(r)-n) < u {
			return "", false
		}
		v := string(r[n : n+int(u)])
		r = r[n+int(u):]
		return v, true
	}
	var ok bool
	if e.etag, ok = str(); !ok || len(r) < 1 {
		return fail()
	}
	e.hasTTL = r[0] == 1
	r = r[1:]
	if e.ttl, n = binary.Varint(r); n <= 0 {
		return fail()
	}
	r = r[n:]
	if e.id, ok = str(); !ok {
		return fail()
	}
	if e.pk, ok = str(); !ok {
		return fail()
	}
	if docKey(e.pk, e.id) != key {
		return fail()
	}
	e.body = append([]byte(nil), r...)
	return e, nil
}
