package jsontext

import (
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// DecodeShared decodes one JSON value (white space around it allowed) into
// the Go values encoding/json gives an any: map[string]any, []any (never
// nil), float64, string, bool and nil, with the same results: the last of
// two members of one name wins, escapes and invalid UTF-8 decode as
// AppendUnescaped says, a number a float64 cannot hold is an error, and
// nesting is bounded by MaxDepth.
//
// Strings without escapes that are valid UTF-8 share data's memory instead
// of copying it (short member names are interned instead: one copy for
// every document), so data must never be modified
// while the value is in use. That is the point: a stored document's decoded
// form then costs its maps, slices and boxes, not a second copy of its
// text, and decoding runs several times faster than encoding/json's
// reflection-based decoder. It costs one pass over data plus an allocation
// per container (at its exact size), number and string.
func DecodeShared(data []byte) (any, error) {
	d := decoders.Get().(*decoder)
	defer d.release()
	d.s = NewScanner(data, Lenient)
	v, err := d.decodeValue(0)
	if err != nil {
		return nil, err
	}
	if s := &d.s; s.SkipSpace() != len(data) {
		return nil, s.Fail("unexpected " + strconv.QuoteRune(rune(data[s.pos])) + " after the value")
	}
	return v, nil
}

// decoders keeps decoders' scratch between documents.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

// release returns d to the pool, unless its scratch grew large (a huge
// document's), which the pool should not keep.
func (d *decoder) release() {
	if cap(d.vals) > 4096 {
		return
	}
	clear(d.names) // left over only after an error
	clear(d.vals)
	*d = decoder{names: d.names[:0], vals: d.vals[:0]}
	decoders.Put(d)
}

// decoder holds the values of the containers being decoded, so each
// container is allocated once at its exact size when it closes.
type decoder struct {
	s     Scanner
	names []string
	vals  []any
}

// decodeValue decodes the value after white space, which depth containers
// enclose. It recurses once per level, as encoding/json does; MaxDepth
// bounds the recursion.
func (d *decoder) decodeValue(depth int) (any, error) {
	s := &d.s
	kind, begin, escaped, err := s.ScalarBounds()
	if err != nil {
		return nil, err
	}
	switch kind {
	case Object, Array:
		if depth >= MaxDepth {
			return nil, s.Fail("nested too deeply (more than " + strconv.Itoa(MaxDepth) + " levels)")
		}
		if kind == Array {
			elems, err := s.Array()
			if err != nil {
				return nil, err
			}
			mark, err := d.items(depth, func() (string, bool, error) {
				ok, err := elems.Next()
				return "", ok, err
			})
			if err != nil {
				return nil, err
			}
			a := make([]any, len(d.vals)-mark)
			copy(a, d.vals[mark:])
			d.pop(mark)
			return a, nil
		}
		members, err := s.Object()
		if err != nil {
			return nil, err
		}
		mark, err := d.items(depth, func() (string, bool, error) {
			name, ok, err := members.Next()
			return memberName(name), ok, err
		})
		if err != nil {
			return nil, err
		}
		m := make(map[string]any, len(d.vals)-mark)
		for i := mark; i < len(d.vals); i++ {
			m[d.names[i]] = d.vals[i] // in order: the last of two names wins
		}
		d.pop(mark)
		return m, nil
	case String:
		return sharedString(Quoted{Body: s.data[begin+1 : s.pos-1], Escaped: escaped}), nil
	case Number:
		text := s.data[begin:s.pos]
		f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(text), len(text)), 64)
		if err != nil {
			s.pos = begin
			return nil, s.Fail("the number " + string(text) + " does not fit a float64")
		}
		return f, nil
	case Bool:
		return s.data[begin] == 't', nil
	}
	return nil, nil // Null
}

// items decodes the values of a container onto the scratch, next moving
// to each (and naming it, in an object) until it reports the end, and
// returns where they start.
func (d *decoder) items(depth int, next func() (string, bool, error)) (mark int, err error) {
	mark = len(d.vals)
	for {
		name, ok, err := next()
		if err != nil || !ok {
			return mark, err
		}
		v, err := d.decodeValue(depth + 1)
		if err != nil {
			return mark, err
		}
		d.names = append(d.names, name)
		d.vals = append(d.vals, v)
	}
}

// pop drops the scratch from mark on, clearing it so it holds no stale
// references.
func (d *decoder) pop(mark int) {
	clear(d.names[mark:])
	clear(d.vals[mark:])
	d.names, d.vals = d.names[:mark], d.vals[:mark]
}

// memberName is a member name's decoded string: an interned copy when it
// is short and plain, so that the maps of many documents share one copy of
// each name. Sharing the document's text would cost no memory either, but
// a map lookup compares the names it probes byte by byte, and names in the
// documents' texts are scattered over the heap, one cache miss each, where
// interned ones stay in cache (a fan-out's ORDER BY spent 38% of its time
// comparing names in document text).
func memberName(q Quoted) string {
	if q.Escaped || len(q.Body) == 0 || len(q.Body) > maxInterned {
		return sharedString(q)
	}
	slot := &interned[maphash.Bytes(internSeed, q.Body)&(internSlots-1)]
	if p := slot.Load(); p != nil && *p == string(q.Body) {
		return *p
	}
	if !utf8.Valid(q.Body) {
		return sharedString(q)
	}
	name := string(q.Body)
	slot.Store(&name)
	return name
}

// The intern table of member names: direct-mapped, a name taking the slot
// its hash picks (and a clashing name the slot's place), so it is bounded
// and costs a hash and a compare a name.
const (
	maxInterned = 32
	internSlots = 4096
)

var (
	internSeed = maphash.MakeSeed()
	interned   [internSlots]atomic.Pointer[string]
)

// sharedString is q's decoded value, sharing the text's memory when the
// body is its own value (no escape, valid UTF-8).
func sharedString(q Quoted) string {
	if len(q.Body) == 0 {
		return ""
	}
	if !q.Escaped && utf8.Valid(q.Body) {
		return unsafe.String(unsafe.SliceData(q.Body), len(q.Body))
	}
	return string(AppendUnescaped(make([]byte, 0, len(q.Body)), q.Body))
}
