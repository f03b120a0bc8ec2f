package hashring

import (
	"fmt"

	"github.com/buraksezer/consistent"
	"github.com/cespare/xxhash/v2"
)

// boundedRing places keys with consistent hashing with bounded loads
// (Mirrokni, Thorup and Zadimoghaddam), as implemented by
// github.com/buraksezer/consistent: the key space is cut into a fixed number
// of partitions (hash mod partitionCount), and the library assigns each
// partition to a collection so that no collection owns more than
// loadFactor × the mean number of partitions.
//
// The library decides the assignment once, when the ring is built; lookups
// then read our own table instead of calling LocateKey, whose read lock
// would serialise every lookup across cores.
type boundedRing struct {
	owner []int32 // link index of each partition
}

// boundedMember names a collection on the library's ring. The library labels
// replicas as name+decimal index with no separator, so "x1"+"0" and "x"+"10"
// would collide; a '#' terminator (which no link can contain, ids may not
// hold '#') makes every label unambiguous.
type boundedMember string

func (m boundedMember) String() string { return string(m) + "#" }

// boundedHasher is xxHash64, deterministic on every platform.
type boundedHasher struct{}

func (boundedHasher) Sum64(data []byte) uint64 { return xxhash.Sum64(data) }

// Bounded-strategy defaults and limits.
const (
	// DefaultLoadFactor is the bounded strategy's default cap on a
	// collection's partitions, relative to the mean.
	DefaultLoadFactor = 1.25
	// MinPartitionsPerCollection is the least number of partitions per
	// collection the bounded strategy accepts: fewer makes every partition a
	// large share of a collection's load.
	MinPartitionsPerCollection = 8
	// DefaultPartitionCount is the bounded strategy's default partition
	// count, for up to DefaultPartitionCount/MinPartitionsPerCollection
	// collections (more collections need an explicit partitionCount).
	//
	// A key's partition is its hash modulo the count, so the count must not
	// change when collections are added: a different count re-partitions
	// almost every key. It is therefore a constant, not a function of the
	// number of collections, and the JSON form always records it.
	DefaultPartitionCount = 8191
	maxPartitionCount     = 1 << 22
)

func newBoundedRing(links []string, vnodes, partitions int, load float64) (r *boundedRing, err error) {
	defer func() {
		// consistent panics when it cannot place partitions within the
		// load bound; that is a configuration error, not a crash.
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("the bounded strategy cannot place %d partitions on %d collections with loadFactor %g: %v", partitions, len(links), load, p)
		}
	}()
	members := make([]consistent.Member, len(links))
	index := make(map[string]int32, len(links))
	for i, l := range links {
		members[i] = boundedMember(l)
		index[boundedMember(l).String()] = int32(i)
	}
	c := consistent.New(members, consistent.Config{
		PartitionCount:    partitions,
		ReplicationFactor: vnodes,
		Load:              load,
		Hasher:            boundedHasher{},
	})
	r = &boundedRing{owner: make([]int32, partitions)}
	for p := 0; p < partitions; p++ {
		m := c.GetPartitionOwner(p)
		if m == nil {
			return nil, fmt.Errorf("the bounded strategy left partition %d without an owner", p)
		}
		r.owner[p] = index[m.String()]
	}
	return r, nil
}

func (r *boundedRing) locate(data []byte) int {
	return int(r.owner[xxhash.Sum64(data)%uint64(len(r.owner))])
}

func (r *boundedRing) points() int { return len(r.owner) }
