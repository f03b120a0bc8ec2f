package hashring

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// Digest is a hash value as the ring sees it: a position on a circle of 2^128
// places, read as an unsigned big-endian number. A generator whose digests
// are shorter than 16 bytes fills the leading bytes and leaves the rest zero,
// which keeps the order of its own values (MurmurHash3's 32-bit value, for
// instance, is the first 4 bytes, big-endian).
type Digest [16]byte

// HashGenerator hashes bytes to ring positions for the md5-style ring and
// for the bounded strategy: a collection's first point is Hash(link), each
// next point Hash of the previous point's first Size bytes, and a key's
// position is Hash(canonical key text). The bounded strategy reads the first
// 8 bytes as the library's 64-bit hash.
//
// Implementations must be deterministic across processes, platforms and Go
// versions (every process that shares a ring must compute the same points),
// safe for concurrent use, and must not retain data. Bytes past Size are
// ignored (the ring zeroes them).
type HashGenerator interface {
	// Size is the number of meaningful leading bytes of a Digest, 1 to 16.
	Size() int
	// Hash returns the digest of data.
	Hash(data []byte) Digest
}

// MD5 is the default generator: MD5 of the bytes, all 16 bytes significant.
// It is the ring of docs/design.md#the-md5-flavour and of the .NET SDK. Cost: one MD5 block per
// 64 bytes of input (about 80 ns for a short key on a current x86 core).
type MD5 struct{}

// Size returns 16.
func (MD5) Size() int { return 16 }

// Hash returns MD5(data).
func (MD5) Hash(data []byte) Digest { return md5.Sum(data) }

// XXHash is the fast generator: the 64-bit xxHash (XXH64, seed 0) of the
// bytes, written big-endian into the first 8 bytes of the digest, the other 8
// zero. On the ring:
//
//   - a collection's first point is XXH64(UTF-8 bytes of the link);
//   - each next point is XXH64 of the previous point's 8 big-endian bytes;
//   - a key's position is XXH64(canonical key text);
//   - points and keys compare as unsigned 64-bit integers, and the owner is
//     the first point at or after the key, wrapping to the first point, as
//     with MD5.
//
// It costs a few nanoseconds per key instead of MD5's ~80, at the price of a
// ring that no other SDK computes. Registered as "xxhash".
type XXHash struct{}

// Size returns 8.
func (XXHash) Size() int { return 8 }

// Hash returns XXH64(data), big-endian, in the first 8 bytes.
func (XXHash) Hash(data []byte) Digest {
	var d Digest
	binary.BigEndian.PutUint64(d[:8], xxhash.Sum64(data))
	return d
}

var (
	generatorsMu sync.RWMutex
	generators   = map[string]HashGenerator{FlavourMD5: MD5{}, FlavourXXHash: XXHash{}}
)

// RegisterHashGenerator names a generator so a resolver's JSON can select it
// with "hash": name. The names of the built-in flavours ("md5", "xxhash",
// "murmur3", "dotnet-x64", "dotnet-x86") and names already registered are
// refused, so a name always means one ring. Every process that reads the
// JSON must register the same generator under the same name, typically from
// an init function. Safe for concurrent use.
func RegisterHashGenerator(name string, g HashGenerator) error {
	if name == "" || g == nil {
		return fmt.Errorf("hashring: RegisterHashGenerator needs a name and a generator")
	}
	if s := g.Size(); s < 1 || s > 16 {
		return fmt.Errorf("hashring: generator %q has digest size %d, want 1 to 16", name, s)
	}
	generatorsMu.Lock()
	defer generatorsMu.Unlock()
	if _, dup := generators[name]; dup || isLegacyFlavour(name) {
		return fmt.Errorf("hashring: hash generator %q is already registered", name)
	}
	generators[name] = g
	return nil
}

func lookupGenerator(name string) (HashGenerator, bool) {
	generatorsMu.RLock()
	defer generatorsMu.RUnlock()
	g, ok := generators[name]
	return g, ok
}

// hashNames lists every value "hash" accepts, sorted, for error messages.
func hashNames() []string {
	generatorsMu.RLock()
	defer generatorsMu.RUnlock()
	out := []string{FlavourMurmur3, FlavourDotnetX64, FlavourDotnetX86}
	for n := range generators {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
