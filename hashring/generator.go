package hashring

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// Digest is a hash value on the md5-style ring: up to 16 bytes, compared as
// an unsigned big-endian number. A generator with shorter digests fills the
// leading bytes and leaves the rest zero, which keeps the order of its own
// digests.
type Digest [16]byte

// HashGenerator hashes bytes to ring positions for the md5-style ring.
// Implementations must be deterministic across processes and platforms and
// safe for concurrent use.
type HashGenerator interface {
	// Size is the number of meaningful bytes of a Digest (1 to 16). The
	// next point of a link is Hash of the previous point's first Size bytes.
	Size() int
	// Hash returns the digest of data. It must not retain data.
	Hash(data []byte) Digest
}

// MD5 is the default generator: MD5 of the bytes, all 16 bytes significant.
type MD5 struct{}

// Size returns 16.
func (MD5) Size() int { return 16 }

// Hash returns MD5(data).
func (MD5) Hash(data []byte) Digest { return md5.Sum(data) }

// XXHash is a faster generator: the 64-bit xxHash (seed 0) of the bytes,
// written big-endian into the first 8 bytes of the digest. A link's next
// point is the xxHash of the previous point's 8 big-endian bytes.
type XXHash struct{}

// Size returns 8.
func (XXHash) Size() int { return 8 }

// Hash returns xxHash64(data) in big-endian order.
func (XXHash) Hash(data []byte) Digest {
	var d Digest
	binary.BigEndian.PutUint64(d[:8], xxhash.Sum64(data))
	return d
}

var (
	generatorsMu sync.RWMutex
	generators   = map[string]HashGenerator{"md5": MD5{}, "xxhash": XXHash{}}
)

// RegisterHashGenerator names a generator so a ring's JSON can select it
// with "hash": name. Names of flavours ("md5", "xxhash", "murmur3",
// "dotnet-x64", "dotnet-x86") and names already registered are refused.
// Every process that reads the JSON must register the same generator.
func RegisterHashGenerator(name string, g HashGenerator) error {
	if name == "" || g == nil {
		return fmt.Errorf("hashring: RegisterHashGenerator needs a name and a generator")
	}
	if s := g.Size(); s < 1 || s > 16 {
		return fmt.Errorf("hashring: generator %q has digest size %d, want 1 to 16", name, s)
	}
	generatorsMu.Lock()
	defer generatorsMu.Unlock()
	if _, dup := generators[name]; dup || isSpecialFlavour(name) {
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

// hashNames lists every value "hash" accepts, for error messages.
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
