package router

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// A continuation token is base64url (no padding) of:
//
//	version   1 byte (tokenVersion)
//	flags     1 byte (bit 0: the body is DEFLATE-compressed)
//	binding   8 bytes: localquery.Hash of database, query text, parameters, key
//	links     4 bytes: CRC-32C of the collection links, in order
//	body      the state (below), compressed when that makes it shorter
//	checksum  4 bytes: CRC-32C of everything before it
//
// The body is a sequence of uvarints: mode, OFFSET still to skip, LIMIT
// still to give + 1 (0: none), results already given (the recomputed
// modes), the number of collections, then per collection its state (0: at
// a row, 1: finished, 2: failed) and for "at a row" the store continuation
// of the page holding the row (length, bytes), the page size it was
// fetched with, the row's index in that page and the digest of the rows
// before it (8 bytes, big-endian; see rowsDigest); then the number of distinct-run hashes and the hashes
// (8 bytes each, big-endian); then, as a varint, the instant the query's
// clock functions read (Unix nanoseconds; 0 when it reads none), so a
// resumed query reads the time its first page read.
//
// The checksum catches corruption; the binding and the links hash tell a
// token of another query from one whose database changed its collections.
// Neither is a secret: a token is a position, not a credential.
//
// Version 5 adds the digest of the rows a position skips (version 4
// tokens, without it, are refused as of another version); version 4 binds
// by localquery.Hash (version 3 by SHA-256).
const tokenVersion = 5

const (
	srcAt byte = iota
	srcDone
	srcFailed
)

type srcState struct {
	state byte
	tok   string
	size  int // the page size tok was fetched with (a refetch needs as many)
	skip  int
	// sum is the rowsDigest of the skip rows the position is past: a
	// refetch whose first skip rows digest otherwise is not the page the
	// token counted in, so skipping as many would skip or repeat rows.
	sum uint64
}

type tokenState struct {
	mode    execMode
	offLeft int
	limLeft int // -1: none
	emitted int
	srcs    []srcState
	run     []uint64
	clock   int64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// flaters keeps DEFLATE writers: each holds several hundred kilobytes of
// tables, too much to allocate per token.
var flaters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// inflaters keeps DEFLATE readers (flate.Resetter), each holding a
// 32-kilobyte window: a token decoded every page should not allocate one.
var inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

// binding is what a token is bound to: the first 8 bytes of the one
// query-binding hash (localquery.Hash) of the database, the query text, its
// parameters and the key.
func binding(dbLink string, q store.Query, keyText string) ([8]byte, error) {
	b, err := localquery.Hash(dbLink, q, keyText)
	if err != nil {
		return [8]byte{}, fmt.Errorf("router: %w", err)
	}
	return [8]byte(b[:8]), nil
}

func linksHash(links []string) uint32 {
	return crc32.Checksum([]byte(strings.Join(links, "\x00")), castagnoli)
}

func (t *tokenState) encode(bind [8]byte, lh uint32) string {
	body, flags := compress(t.body())
	return seal(bind, lh, flags, body)
}

// compress returns body DEFLATE-compressed with flags bit 0 set when that
// makes it shorter, else body and 0.
func compress(body []byte) ([]byte, byte) {
	flags := byte(0)
	if len(body) > 96 {
		z := &bytes.Buffer{}
		w := flaters.Get().(*flate.Writer)
		w.Reset(z)
		_, _ = w.Write(body)
		_ = w.Close()
		flaters.Put(w)
		if z.Len() < len(body) {
			body, flags = z.Bytes(), 1
		}
	}
	return body, flags
}

// body writes the state, uncompressed.
func (t *tokenState) body() []byte {
	var body []byte
	body = binary.AppendUvarint(body, uint64(t.mode))
	body = binary.AppendUvarint(body, uint64(t.offLeft))
	body = binary.AppendUvarint(body, uint64(t.limLeft+1))
	body = binary.AppendUvarint(body, uint64(t.emitted))
	body = binary.AppendUvarint(body, uint64(len(t.srcs)))
	for _, s := range t.srcs {
		body = append(body, s.state)
		if s.state == srcAt {
			body = binary.AppendUvarint(body, uint64(len(s.tok)))
			body = append(body, s.tok...)
			body = binary.AppendUvarint(body, uint64(s.size))
			body = binary.AppendUvarint(body, uint64(s.skip))
			body = binary.BigEndian.AppendUint64(body, s.sum)
		}
	}
	body = binary.AppendUvarint(body, uint64(len(t.run)))
	for _, h := range t.run {
		body = binary.BigEndian.AppendUint64(body, h)
	}
	return binary.AppendVarint(body, t.clock)
}

// seal wraps a body (compressed when flags has bit 0) in the token's
// envelope: version, flags, binding, links hash, checksum.
func seal(bind [8]byte, lh uint32, flags byte, body []byte) string {
	out := make([]byte, 0, 14+len(body)+4)
	out = append(out, tokenVersion, flags)
	out = append(out, bind[:]...)
	out = binary.BigEndian.AppendUint32(out, lh)
	out = append(out, body...)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
	return base64.RawURLEncoding.EncodeToString(out)
}

func badToken(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadContinuation, fmt.Sprintf(format, args...))
}

// maxTokenBody bounds a decompressed body, so a forged token cannot make
// the router allocate without limit.
const maxTokenBody = 16 << 20

func decodeToken(s string, bind [8]byte, lh uint32, width int) (*tokenState, error) {
	body, err := unseal(s, bind, "query, parameters or partition key", func(got uint32) error {
		if got != lh {
			return badToken("the database's collections changed since it was issued (a new resolver); run the query again")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	d := tokenReader{b: body}
	t := &tokenState{}
	t.mode = execMode(d.uint())
	t.offLeft = d.int()
	t.limLeft = d.int() - 1
	t.emitted = d.int()
	nsrc := d.int()
	if d.err == nil && nsrc != width {
		return nil, badToken("it records %d collections, the query has %d", nsrc, width)
	}
	for i := 0; i < nsrc && d.err == nil; i++ {
		st := srcState{state: d.byte()}
		switch st.state {
		case srcAt:
			st.tok = string(d.bytes(d.int()))
			st.size = d.int()
			st.skip = d.int()
			st.sum = binary.BigEndian.Uint64(d.bytes(8))
		case srcDone, srcFailed:
		default:
			d.fail()
		}
		t.srcs = append(t.srcs, st)
	}
	nrun := d.int()
	for i := 0; i < nrun && d.err == nil; i++ {
		t.run = append(t.run, binary.BigEndian.Uint64(d.bytes(8)))
	}
	t.clock = d.varint()
	if d.err != nil || len(d.b) != 0 {
		return nil, badToken("malformed state")
	}
	return t, nil
}

// unseal opens a token sealed by seal: it checks the encoding, version,
// checksum and binding (what names what else a binding stands for, in the
// error), hands the links hash to links to check, and returns the body,
// decompressed.
func unseal(s string, bind [8]byte, what string, links func(uint32) error) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, badToken("not base64url: %v", err)
	}
	if len(raw) < 18 {
		return nil, badToken("%d bytes is too short", len(raw))
	}
	if raw[0] != tokenVersion {
		return nil, badToken("version %d, this router reads version %d", raw[0], tokenVersion)
	}
	n := len(raw) - 4
	if crc32.Checksum(raw[:n], castagnoli) != binary.BigEndian.Uint32(raw[n:]) {
		return nil, badToken("checksum mismatch: the token is corrupt or truncated")
	}
	if !bytes.Equal(raw[2:10], bind[:]) {
		return nil, badToken("it belongs to another %s", what)
	}
	if err := links(binary.BigEndian.Uint32(raw[10:14])); err != nil {
		return nil, err
	}
	body := raw[14:n]
	if raw[1]&1 != 0 {
		r := inflaters.Get().(io.ReadCloser)
		_ = r.(flate.Resetter).Reset(bytes.NewReader(body), nil)
		body, err = io.ReadAll(io.LimitReader(r, maxTokenBody+1))
		inflaters.Put(r)
		if err != nil || len(body) > maxTokenBody {
			return nil, badToken("compressed state does not decompress")
		}
	} else if raw[1] != 0 {
		return nil, badToken("unknown flags %#x", raw[1])
	}
	return body, nil
}

var errShortToken = errors.New("short")

// tokenReader reads a token body; the first error sticks and zero values
// follow it.
type tokenReader struct {
	b   []byte
	err error
}

func (d *tokenReader) fail() {
	if d.err == nil {
		d.err = errShortToken
	}
	d.b = nil
}

func (d *tokenReader) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	if v > math.MaxInt64 {
		d.fail()
		return 0
	}
	return uint64(d.took(n, int64(v)))
}

func (d *tokenReader) varint() int64 {
	v, n := binary.Varint(d.b)
	return d.took(n, v)
}

// took consumes the n bytes a varint read took and returns v, or fails
// (returning 0) when the read failed (n <= 0).
func (d *tokenReader) took(n int, v int64) int64 {
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// int reads a uvarint that must fit a non-negative int of sane size.
func (d *tokenReader) int() int {
	v := d.uint()
	if v > 1<<40 {
		d.fail()
		return 0
	}
	return int(v)
}

func (d *tokenReader) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// bytes reads n bytes; after an error it returns 8 zero bytes, so callers
// reading a fixed-size value need no check of their own.
func (d *tokenReader) bytes(n int) []byte {
	if n < 0 || len(d.b) < n {
		d.fail()
		return make([]byte, 8)
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

// keyText is the text a query's partition key is bound to a token by.
func keyText(key any) string {
	if key == nil {
		return ""
	}
	// A single value by its identity text ("1" and 1 differ); a composite
	// key by its canonical JSON array, every part.
	if t, err := partitionkey.IdentityText(key); err == nil {
		return t
	}
	if t, err := partitionkey.PlacementText(key); err == nil {
		return t
	}
	b, err := json.Marshal(key)
	if err != nil {
		return fmt.Sprintf("%T %v", key, key)
	}
	return fmt.Sprintf("%T %s", key, b)
}
