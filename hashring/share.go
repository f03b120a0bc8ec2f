package hashring

import (
	"math"
	"runtime"
	"strconv"
	"sync"
	"weak"
)

// shared holds every ring built and still in use, by its settings (see
// ringKey), so that resolvers of the same settings share one ring instead
// of each building its own: a lookup or range whose targets are written
// alike, the next version of a state document whose rings did not change
// (a following router decodes every version), each router of a process
// decoding the same definition. A ring is immutable, so sharing it changes
// nothing a resolver does. Entries are weak: a ring no resolver holds is
// collected as it would be without them, and its entry removed.
var shared = struct {
	sync.Mutex
	rings map[string]weak.Pointer[Ring]
}{rings: map[string]weak.Pointer[Ring]{}}

// ringKey names a ring by everything that decides its points: the
// strategy and its settings, the flavour (a registered generator's name
// cannot be registered again), the virtual nodes and the links, in order.
// Each link is written after its length, so no two lists share a key.
func ringKey(strategy, hash string, vnodes int, load float64, partitions int, links []string) string {
	n := len(strategy) + len(hash) + 48
	for _, l := range links {
		n += len(l) + 8
	}
	b := make([]byte, 0, n)
	b = append(b, strategy...)
	b = append(b, 0)
	b = append(b, hash...)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(vnodes), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, math.Float64bits(load), 16)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(partitions), 10)
	for _, l := range links {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(len(l)), 10)
		b = append(b, ':')
		b = append(b, l...)
	}
	return string(b)
}

// sharedRing returns the ring in use for key, or nil.
func sharedRing(key string) *Ring {
	shared.Lock()
	defer shared.Unlock()
	return shared.rings[key].Value()
}

// shareRing records g, just built, as the ring for key and returns it; if
// another resolver recorded one meanwhile, it returns that one instead.
func shareRing(key string, g *Ring) *Ring {
	shared.Lock()
	defer shared.Unlock()
	if old := shared.rings[key].Value(); old != nil {
		return old
	}
	wp := weak.Make(g)
	shared.rings[key] = wp
	runtime.AddCleanup(g, forgetRing, sharedEntry{key, wp})
	return g
}

type sharedEntry struct {
	key string
	wp  weak.Pointer[Ring]
}

// forgetRing removes the entry of a collected ring, unless a newer ring
// took its place.
func forgetRing(e sharedEntry) {
	shared.Lock()
	defer shared.Unlock()
	if shared.rings[e.key] == e.wp {
		delete(shared.rings, e.key)
	}
}
