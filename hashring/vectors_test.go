package hashring

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
)

// The golden vectors of issue 2. They pin the rings to docs/design.md#the-ring and to the
// old SDKs' own tests.
//
// How the SDKs place a key, read from their sources:
//
//   - .NET (Microsoft.Azure.Documents.Partitioning.ConsistentHashRing): a
//     link's first point is MD5(BitConverter.GetBytes(link.GetHashCode())),
//     each next point MD5 of the previous 16 bytes; points sort by unsigned
//     byte-wise comparison (big-endian); a key's hash is
//     MD5(Encoding.UTF8.GetBytes(key)) and its owner the lower bound (first
//     point >= hash), wrapping to 0. HashPartitionResolver asks for
//     virtualNodes × collections points, so each link gets exactly
//     virtualNodes.
//   - Python (consistent_hash_ring.py) and Java (ConsistentHashRing.java):
//     the first point is MurmurHash3 of the link's UTF-8 bytes, each next
//     point MurmurHash3 of the previous value's 4 little-endian bytes
//     (Python pack('I'), Java's little-endian byte array); points compare
//     from the last byte to the first, i.e. as unsigned 32-bit integers
//     (Java casts each signed byte to char, which keeps that order); the
//     sort is stable; a key is hashed from its UTF-8 bytes (both SDKs refuse
//     anything but a string, so "999" is the text, not a number) and the
//     owner is found by a linear scan for p[i] <= hash < p[i+1], falling
//     back to the last point: the last point at or before the hash, wrapping
//     to the last point.
//   - Node.js (consistentHashRing.js, murmurHash.js): the same ring, with
//     hashes kept as numbers: a next point is the hash of the previous
//     number's 4 little-endian bytes. Two quirks docshard does not copy: a
//     key that is a JS number is hashed as its uint32 bytes (docshard hashes
//     a number's RFC 8785 text, as Python and Java would after str()), and a
//     point whose value is exactly 0 is hashed as the empty string
//     (`key || ""`) instead of four zero bytes (a 2^-32 event per point).
func TestGoldenVectors(t *testing.T) {
	users := []string{"dbs/app/colls/users0", "dbs/app/colls/users1", "dbs/app/colls/users2"}
	javaPython := []string{"dbs/db/colls/coll0", "dbs/db/colls/coll1"}
	node := []string{"dbs/foo/colls/A", "dbs/foo/colls/B", "dbs/foo/colls/C"}
	dotnet := []string{"dbs/T6t8AA==/colls/T6t8ALDFcwA=/", "dbs/T6t8AA==/colls/T6t8ANdyZQE=/"}
	cases := []struct {
		name   string
		links  []string
		opts   Options
		key    any
		expect string
	}{
		{"md5 J1", users, Options{VirtualNodes: 16}, "J1", users[0]},
		{"md5 U4", users, Options{VirtualNodes: 16}, "U4", users[2]},
		{"md5 alice", users, Options{VirtualNodes: 16}, "alice", users[1]},
		{"md5 default virtual nodes", users, Options{}, "alice", users[1]},
		{"java/python beadledom", javaPython, Options{Hash: FlavourMurmur3, VirtualNodes: 5}, "beadledom", javaPython[1]},
		{"java/python 999", javaPython, Options{Hash: FlavourMurmur3, VirtualNodes: 5}, "999", javaPython[0]},
		{"node a", node, Options{Hash: FlavourMurmur3, VirtualNodes: 128}, "a", node[0]},
		{"node a default points", node, Options{Hash: FlavourMurmur3}, "a", node[0]},
		{".NET user x64", dotnet, Options{Hash: FlavourDotnetX64, VirtualNodes: 128}, "CFR201601192F81OGO", dotnet[0]},
		{".NET user x86", dotnet, Options{Hash: FlavourDotnetX86, VirtualNodes: 128}, "CFR201601192F81OGO", dotnet[1]},
		{".NET user x64 default points", dotnet, Options{Hash: FlavourDotnetX64}, "CFR201601192F81OGO", dotnet[0]},
		{".NET user x86 default points", dotnet, Options{Hash: FlavourDotnetX86}, "CFR201601192F81OGO", dotnet[1]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(tc.links, &tc.opts)
			require.NoError(t, err)
			got, err := r.ResolveForCreate(tc.key)
			require.NoError(t, err)
			assert.Equal(t, tc.expect, got)
			read, err := r.ResolveForRead(tc.key)
			require.NoError(t, err)
			assert.Equal(t, []string{tc.expect}, read)
			// The same placement through the Ring.
			i, err := r.Ring().Owner(tc.key)
			require.NoError(t, err)
			assert.Equal(t, tc.expect, tc.links[i])
		})
	}
}

// TestPythonRingPoints checks every point of the Python SDK's
// test_consistent_hash_ring (two collections, 5 partitions each), in ring
// order: the point chain, the unsigned order and the stable tie order.
func TestPythonRingPoints(t *testing.T) {
	ls := []string{"dbs/db/colls/coll0", "dbs/db/colls/coll1"}
	r, err := New(ls, &Options{Hash: FlavourMurmur3, VirtualNodes: 5})
	require.NoError(t, err)
	want := []struct {
		link  int
		value uint32
	}{
		{0, 1076200484}, {0, 1302652881}, {0, 2210251988}, {1, 2341558382}, {0, 2348251587},
		{0, 2887945459}, {1, 2894403633}, {1, 3031617259}, {1, 3090861424}, {1, 4222475028},
	}
	pts := r.Ring().Points()
	require.Len(t, pts, len(want))
	for i, w := range want {
		assert.Equal(t, w.link, pts[i].Link, "point %d", i)
		assert.Equal(t, w.value, binary.BigEndian.Uint32(pts[i].At[:4]), "point %d", i)
		assert.Equal(t, make([]byte, 12), pts[i].At[4:], "point %d: a murmur3 position has 4 bytes", i)
	}
}

func TestMurmur3Vectors(t *testing.T) {
	assert.Equal(t, uint32(1099701186), murmur3([]byte("afdgdd"), 0))
	// The Node.js SDK's tests: the number 374 hashed as its 4 little-endian
	// bytes (how a ring point is hashed into the next), and 374.0 as the 8
	// bytes of a little-endian double.
	assert.Equal(t, uint32(2455513042), murmur3([]byte{118, 1, 0, 0}, 0))
	var f [8]byte
	binary.LittleEndian.PutUint64(f[:], math.Float64bits(374.0))
	assert.Equal(t, uint32(3717946798), murmur3(f[:], 0))
	// The Python SDK's seeded vectors (pymmh3), which walk every tail length.
	for _, tc := range []struct {
		in   string
		seed uint32
		want uint32
	}{
		{"", 0x1B873593, 1738713326},
		{"1", 0xE82562E4, 3978597072},
		{"00", 0xB4C39035, 459540986},
		{"eyetooth", 0x8161BD86, 1864131224},
		{"acid", 0x4DFFEAD7, 3116405302},
		{"elevation", 0x1A9E1828, 3745560233},
		{"dent", 0xE73C4579, 3554761172},
		{"homeland", 0xB3DA72CA, 3144830214},
		{"glamor", 0x8078A01B, 2812447113},
		{"flags", 0x4D16CD6C, 40273746},
		{"democracy", 0x19B4FABD, 2966836708},
		{"bumble", 0xE653280E, 214161406},
		{"catch", 0xB2F1555F, 3451276184},
		{"omnomnomnivore", 0x7F8F82B0, 4291675192},
		{"The quick brown fox jumps over the lazy dog", 0x4C2DB001, 3381504877},
	} {
		assert.Equal(t, tc.want, murmur3([]byte(tc.in), tc.seed), "%q seed %#x", tc.in, tc.seed)
	}
	// SMHasher's reference values.
	assert.Equal(t, uint32(0), murmur3(nil, 0))
	assert.Equal(t, uint32(0x514E28B7), murmur3(nil, 1))
	assert.Equal(t, uint32(0x2e4ff723), murmur3([]byte("The quick brown fox jumps over the lazy dog"), 0))
}

func TestDotnetGetHashCode(t *testing.T) {
	assert.Equal(t, uint32(0xFFF561E1), uint32(dotnetHash32("hello")))
	assert.Equal(t, uint32(0xEC7BF82A), uint32(dotnetHash64("hello")))
	// Every length modulo 4 walks the terminator without running off the
	// end, and characters outside the BMP become surrogate pairs.
	for _, s := range []string{"", "a", "ab", "abc", "abcd", "abcde", "日本語", "😀x", "\xff"} {
		assert.NotPanics(t, func() { dotnetHash32(s); dotnetHash64(s) }, s)
	}
	// An invalid UTF-8 byte is U+FFFD, as .NET decodes it.
	assert.Equal(t, dotnetHash64("\uFFFD"), dotnetHash64("\xff"))
	assert.Equal(t, dotnetHash32("a\uFFFD"), dotnetHash32("a\xff"))
	// The 64-bit walk stops at U+0000; the 32-bit one uses the length.
	assert.Equal(t, dotnetHash64("ab"), dotnetHash64("ab\x00cd"))
	assert.NotEqual(t, dotnetHash32("ab"), dotnetHash32("ab\x00cd"))
	// The points of a .NET ring start at MD5 of the 4 little-endian bytes of
	// the hash code.
	r, err := New([]string{"dbs/a/colls/b"}, &Options{Hash: FlavourDotnetX64, VirtualNodes: 1})
	require.NoError(t, err)
	var seed [4]byte
	binary.LittleEndian.PutUint32(seed[:], uint32(dotnetHash64("dbs/a/colls/b")))
	assert.Equal(t, MD5{}.Hash(seed[:]), r.Ring().Points()[0].At)
}

// TestMD5RingPoints checks the md5 ring's points against docs/design.md#the-md5-flavour step by
// step: MD5 of the link, then MD5 of the previous digest, sorted as
// unsigned big-endian numbers.
func TestMD5RingPoints(t *testing.T) {
	ls := []string{"dbs/app/colls/users0", "dbs/app/colls/users1"}
	r, err := New(ls, &Options{VirtualNodes: 3})
	require.NoError(t, err)
	var want []Point
	for i, l := range ls {
		d := MD5{}.Hash([]byte(l))
		for range 3 {
			want = append(want, Point{At: d, Link: i})
			d = MD5{}.Hash(d[:])
		}
	}
	got := r.Ring().Points()
	assert.ElementsMatch(t, want, got)
	for i := 1; i < len(got); i++ {
		assert.Negative(t, compareDigest(got[i-1].At, got[i].At), "points ascend")
	}
}

func compareDigest(a, b Digest) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// TestDesignVectors pins the vector table of docs/design.md#vectors: seven
// keys (strings, numbers, a composite key) under every flavour and both
// strategies, on the users links with default settings.
func TestDesignVectors(t *testing.T) {
	users := []string{"dbs/app/colls/users0", "dbs/app/colls/users1", "dbs/app/colls/users2"}
	configs := []struct {
		name string
		opts Options
	}{
		{"md5", Options{}},
		{"xxhash", Options{Hash: FlavourXXHash}},
		{"murmur3", Options{Hash: FlavourMurmur3}},
		{"dotnet-x64", Options{Hash: FlavourDotnetX64}},
		{"dotnet-x86", Options{Hash: FlavourDotnetX86}},
		{"bounded md5", Options{Strategy: StrategyBounded}},
		{"bounded xxhash", Options{Strategy: StrategyBounded, Hash: FlavourXXHash}},
	}
	// want[key][config] is the index of the owning link.
	keys := []any{"J1", "U4", "alice", 42, 1.5, 1e21, resolver.CompositeKey{"eu", 42}}
	want := [][]int{
		{0, 1, 0, 0, 2, 1, 1},
		{2, 0, 2, 0, 1, 1, 0},
		{1, 0, 2, 0, 0, 0, 2},
		{0, 0, 2, 2, 2, 1, 2},
		{1, 0, 1, 2, 1, 2, 2},
		{1, 1, 2, 1, 2, 0, 0},
		{0, 1, 2, 0, 2, 1, 1},
	}
	for ci, c := range configs {
		r, err := New(users, &c.opts)
		require.NoError(t, err)
		for ki, k := range keys {
			got, err := r.ResolveForCreate(k)
			require.NoError(t, err)
			assert.Equal(t, users[want[ki][ci]], got, "%s: key %v", c.name, k)
		}
	}
}
