package hashring

import (
	"fmt"
	"math"

	"github.com/buraksezer/consistent"

	"github.com/docshard/docshard/resolver"
)

// The bounded strategy: consistent hashing with bounded loads (Mirrokni,
// Thorup and Zadimoghaddam, 2017) as github.com/buraksezer/consistent v0.10.0
// implements it.
//
// The library puts virtualNodes points per collection on a 64-bit ring (the
// point of replica i is Sum64(name + decimal i)), cuts the key space into
// partitionCount partitions (a key's partition is Sum64(key) mod the count),
// and walks the partitions in order 0, 1, 2, ...: partition p goes to the
// owner of the first point at or after Sum64(8 little-endian bytes of p)
// that still has room, room being ceil(floor(partitionCount / collections) ×
// loadFactor) partitions. No collection holds more than that, so the largest
// holds at most about loadFactor × the mean.
//
// Placement is deterministic across processes: the walk reads no map in
// iteration order, points are added in the configured link order (so equal
// hashes resolve alike), and Sum64 is the resolver's generator (the first 8
// bytes of its digest, big-endian: MD5 by default, XXH64 for "xxhash").
// The library decides the table once, when the resolver is built; lookups
// read our copy of it rather than calling LocateKey, whose read lock would
// serialise lookups across cores.

// Bounded-strategy defaults and limits.
const (
	// DefaultLoadFactor is the bounded strategy's default cap on a
	// collection's partitions, relative to the mean.
	DefaultLoadFactor = 1.25
	// MaxLoadFactor is the largest load factor accepted.
	MaxLoadFactor = 100.0
	// MinPartitionsPerCollection is the least number of partitions per
	// collection the bounded strategy accepts: a partition is the unit of
	// balance, so with fewer each one is a large share of a collection's
	// load (and the library cannot honour a load factor close to 1).
	MinPartitionsPerCollection = 8
	// DefaultPartitionCount is the bounded strategy's default partition
	// count (a prime), for up to DefaultPartitionCount /
	// MinPartitionsPerCollection = 1023 collections; more collections need
	// an explicit partitionCount of at least 8 per collection.
	//
	// A key's partition is its hash modulo the count, so the count must not
	// change when collections are added: a different count re-partitions
	// almost every key. It is therefore a constant, not a function of the
	// number of collections, and the JSON form always records it.
	DefaultPartitionCount = 8191
	// MaxPartitionCount caps the partition table (4 bytes per partition;
	// the library places 2^20 partitions in about half a second).
	MaxPartitionCount = 1 << 20
)

// boundedMember names a collection on the library's ring. The library labels
// replica i as name + decimal i with no separator, so the links ".../x1" and
// ".../x" would both produce ".../x10" (replica 0 of the first, replica 10
// of the second) and share points. A '#' terminator, which no link contains
// (Cosmos DB ids cannot hold '#', and ValidateLink refuses it), makes every
// label name one link and one replica.
type boundedMember struct{ label string }

func newBoundedMember(link string) boundedMember { return boundedMember{label: link + "#"} }

// String returns the member's name on the library's ring.
func (m boundedMember) String() string { return m.label }

// boundedHasher is the library's 64-bit hash: the first 8 bytes of the
// ring's key position, so labels, partitions and keys hash alike.
type boundedHasher struct{ g *Ring }

func (h boundedHasher) Sum64(data []byte) uint64 {
	hi, _ := h.g.position(data)
	return hi
}

// boundedCapacity is the library's cap on partitions per collection.
func boundedCapacity(partitions, collections int, load float64) float64 {
	return math.Ceil(float64(partitions/collections) * load)
}

// buildBounded fills g's partition table. Errors are *resolver.ConfigError.
func (g *Ring) buildBounded(vnodes, partitions int, load float64) (err error) {
	n := len(g.links)
	// The library panics ("not enough room to distribute partitions") when
	// the caps cannot hold every partition; say why before it does.
	if capacity := boundedCapacity(partitions, n, load); float64(n)*capacity < float64(partitions) {
		return resolver.Invalid("loadFactor", load, fmt.Sprintf(
			"each of %d collections may hold ceil(floor(%d/%d) × %g) = %g partitions, %g in all, fewer than partitionCount %d: raise loadFactor or choose a partitionCount that %d divides",
			n, partitions, n, load, capacity, float64(n)*capacity, partitions, n))
	}
	defer func() {
		// Any other panic of the library is a configuration it cannot
		// place, not a crash.
		if p := recover(); p != nil {
			g.owner = nil
			err = resolver.Invalid("partitionCount", partitions, fmt.Sprintf(
				"the bounded strategy cannot place %d partitions on %d collections with loadFactor %g and %d virtual nodes: %v",
				partitions, n, load, vnodes, p))
		}
	}()
	members := make([]consistent.Member, n)
	index := make(map[string]int32, n)
	for i, l := range g.links {
		m := newBoundedMember(l)
		members[i] = m
		index[m.label] = int32(i)
	}
	c := consistent.New(members, consistent.Config{
		PartitionCount:    partitions,
		ReplicationFactor: vnodes,
		Load:              load,
		Hasher:            boundedHasher{g},
	})
	g.owner = make([]int32, partitions)
	held := make([]int, n)
	for p := range partitions {
		m := c.GetPartitionOwner(p)
		if m == nil {
			return resolver.Invalid("partitionCount", partitions, fmt.Sprintf("the bounded strategy left partition %d without an owner", p))
		}
		i, ok := index[m.String()]
		if !ok {
			return resolver.Invalid("partitionCount", partitions, fmt.Sprintf("the bounded strategy gave partition %d to an unknown member %q", p, m.String()))
		}
		g.owner[p] = i
		held[i]++
	}
	for i, h := range held {
		if h == 0 {
			return resolver.Invalid(fmt.Sprintf("collections[%d]", i), g.links[i],
				fmt.Sprintf("the bounded strategy gave this collection none of %d partitions, so it would receive no keys: raise partitionCount or virtualNodes", partitions))
		}
	}
	return nil
}
