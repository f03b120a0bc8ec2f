package memstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SalvageReport says what Salvage copied and what it could not.
type SalvageReport struct {
	Collections int               // collections copied
	Documents   int               // intact documents copied (not counting those a reshard moved out, kept for the change feed)
	Damaged     []*CorruptError   // each damaged record, collection or part of the file left behind
	Fences      int               // fence epochs copied
	Stopped     map[string]string // collections whose walk stopped early (a page bbolt cannot read), with why
}

// Salvage copies every intact document of the durable store in dir into a
// new store in the directory to (which must not hold one), with its system
// properties, LSN, reshard marks and collection settings (and the records
// a reshard's clean-up keeps for the change feed), and reports every
// damaged record it leaves behind. It reads the damaged file read-only
// (bbolt's panics and memory faults caught), so it works where Open
// refuses the store: a record whose checksum fails, or a collection whose
// pages bbolt cannot read past some point (the records before it are
// kept). A file whose meta pages are both damaged cannot be read at all:
// Salvage then fails with the *CorruptError; a record of a newer format
// than this docshard reads fails it with an error wrapping ErrNewerFormat.
// It costs one pass over the file and one write of what it keeps.
func Salvage(dir, to string) (*SalvageReport, error) {
	src := filepath.Join(dir, dbFile)
	dst := filepath.Join(to, dbFile)
	if err := checkFile(src); err != nil {
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Reason == "" || !isTruncation(ce) {
			return nil, err
		}
		// Truncated: read what the file still holds.
	}
	if _, err := os.Stat(dst); err == nil {
		return nil, fmt.Errorf("memstore: salvage: %s exists: salvage into a new directory", dst)
	}
	var db *bolt.DB
	if err := guard(src, func() (err error) {
		db, err = bolt.Open(src, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		return err
	}); err != nil {
		return nil, err
	}
	defer db.Close()
	if err := os.MkdirAll(to, 0o755); err != nil {
		return nil, fmt.Errorf("memstore: %w", err)
	}
	out, err := bolt.Open(dst, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("memstore: salvage: %w", err)
	}
	rep := &SalvageReport{Stopped: map[string]string{}}
	err = out.Update(func(w *bolt.Tx) error {
		for _, name := range [][]byte{collectionsBucket, fencesBucket, marksBucket} {
			if _, err := w.CreateBucket(name); err != nil {
				return err
			}
		}
		return db.View(func(r *bolt.Tx) error { return salvageTx(src, r, w, rep) })
	})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(dst) // a failed salvage leaves no half store to refuse the next try
		return nil, fmt.Errorf("memstore: salvage into %s: %w", dst, err)
	}
	return rep, nil
}

func isTruncation(ce *CorruptError) bool {
	return strings.HasPrefix(ce.Reason, "truncated")
}

// salvageTx copies from r to w what reads intact.
func salvageTx(file string, r, w *bolt.Tx, rep *SalvageReport) error {
	// Fences and marks: small values, copied when they read.
	_ = guard(file, func() error {
		if b := r.Bucket(fencesBucket); b != nil {
			return b.ForEach(func(k, v []byte) error {
				if len(v) == 8 {
					rep.Fences++
					return w.Bucket(fencesBucket).Put(k, v)
				}
				return nil
			})
		}
		return nil
	})
	var meta *bolt.Bucket
	if err := guard(file, func() error { meta = r.Bucket(collectionsBucket); return nil }); err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			rep.Damaged = append(rep.Damaged, ce)
		}
		return nil
	}
	if meta == nil {
		rep.Damaged = append(rep.Damaged, &CorruptError{File: file, Reason: "no collections bucket"})
		return nil
	}
	type coll struct{ link, meta []byte }
	var colls []coll
	if err := guard(file, func() error {
		return meta.ForEach(func(k, v []byte) error {
			colls = append(colls, coll{append([]byte(nil), k...), append([]byte(nil), v...)})
			return nil
		})
	}); err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			rep.Damaged = append(rep.Damaged, ce)
		}
	}
	for _, c := range colls {
		if err := salvageCollection(file, r, w, string(c.link), c.meta, rep); err != nil {
			return err
		}
	}
	return nil
}

func salvageCollection(file string, r, w *bolt.Tx, link string, metaJSON []byte, rep *SalvageReport) error {
	m, _, err := collectionMeta(file, link, metaJSON)
	if err != nil { // Open would refuse the collection: it is left behind
		rep.Damaged = append(rep.Damaged, err.(*CorruptError))
		return nil
	}
	bucket := docsBucket(m.UID)
	// Every read of the damaged file runs under guard: a page past its end
	// is an error here, not a signal.
	var b *bolt.Bucket
	var lastMark uint64
	var markVal []byte
	if err := guard(file, func() error {
		if b = r.Bucket(bucket); b != nil {
			lastMark = mark(r, bucket)
		}
		if v := r.Bucket(marksBucket); v != nil {
			if mk := v.Get(bucket); len(mk) == 8 {
				markVal = append([]byte(nil), mk...)
			}
		}
		return nil
	}); err != nil {
		rep.Stopped[link] = err.Error()
		return nil
	}
	if b == nil {
		rep.Damaged = append(rep.Damaged, &CorruptError{File: file, Reason: fmt.Sprintf("collection %s: its documents bucket is missing", link)})
		return nil
	}
	var kept []*entry
	var newer error
	werr := guard(file, func() error {
		// Read as Open reads them (readRecord), on this goroutine (guarded),
		// each damaged record reported and left behind; a record of a newer
		// version stops the salvage, which would lose it.
		return b.ForEach(func(k, v []byte) error {
			e, _, err := readRecord(file, link, k, v)
			var ce *CorruptError
			switch {
			case errors.As(err, &ce):
				rep.Damaged = append(rep.Damaged, ce)
				return nil
			case err != nil:
				newer = err
				return err
			}
			kept = append(kept, e)
			return nil
		})
	})
	if newer != nil {
		return newer
	}
	if werr != nil {
		rep.Stopped[link] = werr.Error()
	}
	// Records older than the change feed take LSNs above the others, in
	// the order Open gives them.
	maxLSN := lastMark
	for _, e := range kept {
		maxLSN = max(maxLSN, e.lsn)
	}
	giveLSNs(kept, maxLSN)
	nb, err := w.CreateBucket(bucket)
	if err != nil {
		return err
	}
	docs := 0
	for _, e := range kept {
		if err := nb.Put(seqKey(e.seq), encodeRecord(e, e.marks())); err != nil { // a reshard's marks too
			return err
		}
		if !e.ghost {
			docs++
		}
	}
	if err := w.Bucket(collectionsBucket).Put([]byte(link), metaJSON); err != nil {
		return err
	}
	if markVal != nil {
		if err := w.Bucket(marksBucket).Put(bucket, markVal); err != nil {
			return err
		}
	}
	rep.Collections++
	rep.Documents += docs
	return nil
}
