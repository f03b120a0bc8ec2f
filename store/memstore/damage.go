package memstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
)

// ErrCorrupt matches (errors.Is) every *CorruptError: the durable file is
// damaged.
var ErrCorrupt = errors.New("corrupt")

// CorruptError says what is damaged in a durable store's file: the file
// itself (truncated, empty, not a database, a page bbolt cannot read) or
// one stored document, whose checksum does not match. Open refuses the
// store with it; see docs/store.md ("A damaged store") for what to do. It
// matches ErrCorrupt with errors.Is.
type CorruptError struct {
	File       string // the database file
	Collection string // the collection of a damaged document; "" for the file
	ID         string // the document's id as the damaged record reads it; "" when unknown
	Key        uint64 // the record's key in its collection's bucket; 0 for the file
	Reason     string // what is wrong
}

// Error implements error.
func (e *CorruptError) Error() string {
	if e.Collection == "" {
		return fmt.Sprintf("memstore: %s is %v: %s", e.File, ErrCorrupt, e.Reason)
	}
	id := "an unreadable id"
	if e.ID != "" {
		id = fmt.Sprintf("id %q", e.ID)
	}
	return fmt.Sprintf("memstore: %s is %v: collection %s, document %s (record %d): %s", e.File, ErrCorrupt, e.Collection, id, e.Key, e.Reason)
}

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// recordError is the *CorruptError of a record that does not decode, or
// whose checksum fails (e, when not nil, names its document).
func recordError(file, link string, seq uint64, e *entry, err error) *CorruptError {
	ce := &CorruptError{File: file, Collection: link, Key: seq, Reason: err.Error()}
	if e != nil {
		ce.ID = e.id
	}
	return ce
}

// bbolt's file: two meta pages at the start (page 0 at offset 0, page 1 at
// offset pageSize), each a 16-byte page header then the meta: magic,
// version, page size, flags, root bucket (root page, sequence), freelist
// page, high-water page id, transaction id and an FNV-64a checksum of what
// precedes it, in the host's byte order.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltPageHeader = 16
	boltMetaSize   = 64
	boltMinPage    = 512
	boltMaxPage    = 1 << 20
)

type boltMeta struct {
	pageSize uint32
	hwm      uint64 // pages the file holds
	txid     uint64
}

// readMeta reads the meta at off, or says why it is not one.
func readMeta(f *os.File, off int64) (boltMeta, error) {
	var b [boltPageHeader + boltMetaSize]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		if errors.Is(err, io.EOF) {
			return boltMeta{}, errors.New("the file ends inside it")
		}
		return boltMeta{}, err
	}
	m := b[boltPageHeader:]
	ne := binary.NativeEndian
	if ne.Uint32(m[0:]) != boltMagic {
		return boltMeta{}, errors.New("no bbolt magic number")
	}
	if v := ne.Uint32(m[4:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("bbolt format version %d, not %d", v, boltVersion)
	}
	h := fnv.New64a()
	h.Write(m[:56])
	if h.Sum64() != ne.Uint64(m[56:]) {
		return boltMeta{}, errors.New("its checksum does not match")
	}
	meta := boltMeta{pageSize: ne.Uint32(m[8:]), hwm: ne.Uint64(m[40:]), txid: ne.Uint64(m[48:])}
	if meta.pageSize < boltMinPage || meta.pageSize > boltMaxPage || meta.pageSize&(meta.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("page size %d", meta.pageSize)
	}
	return meta, nil
}

// checkFile refuses a file bbolt would misread: empty (bbolt would start a
// new database in it), shorter than its two meta pages, without a valid
// meta page, or shorter than the pages its meta pages say it holds (bbolt
// would read past the end of its memory map: SIGBUS). It reads two pages.
func checkFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	size := st.Size()
	bad := func(format string, args ...any) error {
		return &CorruptError{File: path, Reason: fmt.Sprintf(format, args...)}
	}
	if size == 0 {
		return bad("the file is empty (0 bytes): it holds no database, not even an empty one")
	}
	m0, err0 := readMeta(f, 0)
	var metas []boltMeta
	if err0 == nil {
		metas = append(metas, m0)
	}
	// The second meta page is one page in: at the first's page size, or at
	// the host's when the first is damaged.
	ps := int64(os.Getpagesize())
	if err0 == nil {
		ps = int64(m0.pageSize)
	}
	m1, err1 := readMeta(f, ps)
	if err1 == nil {
		metas = append(metas, m1)
	}
	if len(metas) == 0 {
		return bad("neither meta page is valid (page 0: %v; page 1: %v)", err0, err1)
	}
	for _, m := range metas {
		need := int64(m.hwm) * int64(m.pageSize)
		if m.hwm > uint64(size) || need > size {
			return bad("truncated: the file is %d bytes, its meta page (transaction %d) says it holds %d pages of %d bytes (%d bytes)",
				size, m.txid, m.hwm, m.pageSize, need)
		}
	}
	return nil
}

// guard runs fn, turning a panic or a memory fault inside it (bbolt
// asserts on a damaged page, and reads its file through a memory map) into
// a *CorruptError naming the file.
func guard(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{File: path, Reason: fmt.Sprintf("bbolt cannot read it: %v", r)}
		}
	}()
	return fn()
}

// The record checksum (version 5): CRC-32C of everything after it.
var crcTable = crc32.MakeTable(crc32.Castagnoli)
