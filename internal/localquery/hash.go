package localquery

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/bits"
	"sort"
	"strconv"

	"github.com/docshard/docshard/store"
)

// Binding is what a continuation token is bound to: a hash of the scope
// it was issued in (a collection, a database), the query text, its
// parameters and its partition key.
type Binding [16]byte

// String returns the binding as 32 hex digits.
func (b Binding) String() string { return hex.EncodeToString(b[:]) }

// Hash binds a continuation token to what it was issued for: FNV-128a over
// scope, the query text, the parameters (as JSON, sorted by name) and key
// (the partition key's text, "" for none), each prefixed with its length
// in decimal and a colon. Every token docshard issues is bound by it: the
// router's (the first 8 bytes), the embedded store's and the Cosmos DB
// backend's.
//
// Why this hash: it is the one the embedded store's tokens were bound by
// from the start, and those tokens outlive the process (a durable store,
// docshard serve), so keeping it keeps them valid; it is stable (no random
// seed, no dependence on map order); and it is cheap: without parameters
// it allocates only its result's text, and a string is hashed in place. A
// binding tells a token of another query from the right one; it is not a
// secret and guards against no forger (a token is a position, not a
// credential), so a cryptographic hash would buy nothing here. The
// router's tokens were bound by SHA-256 before; they say so by their
// version, which changed with it, and are refused.
//
// The error is for parameters that have no JSON form.
func Hash(scope string, q store.Query, key string) (Binding, error) {
	pj := "null"
	if len(q.Parameters) > 0 {
		params := append([]store.Param(nil), q.Parameters...)
		sort.SliceStable(params, func(i, j int) bool { return params[i].Name < params[j].Name })
		b, err := json.Marshal(params)
		if err != nil {
			return Binding{}, fmt.Errorf("parameters have no JSON form: %w", err)
		}
		pj = string(b)
	}
	h := newFNV128a()
	var buf [20]byte
	for _, part := range [...]string{scope, q.Text, pj, key} {
		h.write(strconv.AppendInt(buf[:0], int64(len(part)), 10))
		h.writeString(":")
		h.writeString(part)
	}
	var b Binding
	binary.BigEndian.PutUint64(b[:8], h[0])
	binary.BigEndian.PutUint64(b[8:], h[1])
	return b, nil
}

// fnv128a is FNV-1a with 128 bits, as hash/fnv computes it, written out
// so strings are hashed without copying them to byte slices.
type fnv128a [2]uint64 // high, low

func newFNV128a() fnv128a { return fnv128a{0x6c62272e07bb0142, 0x62b821756295c58d} }

// step mixes one byte in: xor, then multiply by the FNV prime 2^88+0x13b.
func (h *fnv128a) step(c byte) {
	h[1] ^= uint64(c)
	hi, lo := bits.Mul64(0x13b, h[1])
	h[0], h[1] = hi+h[1]<<24+0x13b*h[0], lo
}

func (h *fnv128a) write(b []byte) {
	for _, c := range b {
		h.step(c)
	}
}

func (h *fnv128a) writeString(s string) {
	for i := 0; i < len(s); i++ {
		h.step(s[i])
	}
}
