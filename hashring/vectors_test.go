package hashring

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGoldenVectors(t *testing.T) {
	cases := []struct {
		name   string
		links  []string
		opts   Options
		key    any
		expect string
	}{
		{"md5 J1", []string{"dbs/app/colls/users0", "dbs/app/colls/users1", "dbs/app/colls/users2"}, Options{VirtualNodes: 16}, "J1", "dbs/app/colls/users0"},
		{"md5 U4", []string{"dbs/app/colls/users0", "dbs/app/colls/users1", "dbs/app/colls/users2"}, Options{VirtualNodes: 16}, "U4", "dbs/app/colls/users2"},
		{"md5 alice", []string{"dbs/app/colls/users0", "dbs/app/colls/users1", "dbs/app/colls/users2"}, Options{}, "alice", "dbs/app/colls/users1"},
		{"java/python beadledom", []string{"dbs/db/colls/coll0", "dbs/db/colls/coll1"}, Options{Hash: FlavourMurmur3, VirtualNodes: 5}, "beadledom", "dbs/db/colls/coll1"},
		{"java/python 999", []string{"dbs/db/colls/coll0", "dbs/db/colls/coll1"}, Options{Hash: FlavourMurmur3, VirtualNodes: 5}, "999", "dbs/db/colls/coll0"},
		{"node a", []string{"dbs/foo/colls/A", "dbs/foo/colls/B", "dbs/foo/colls/C"}, Options{Hash: FlavourMurmur3, VirtualNodes: 128}, "a", "dbs/foo/colls/A"},
		{"node a default points", []string{"dbs/foo/colls/A", "dbs/foo/colls/B", "dbs/foo/colls/C"}, Options{Hash: FlavourMurmur3}, "a", "dbs/foo/colls/A"},
		{".NET user x64", []string{"dbs/T6t8AA==/colls/T6t8ALDFcwA=/", "dbs/T6t8AA==/colls/T6t8ANdyZQE=/"}, Options{Hash: FlavourDotnetX64, VirtualNodes: 128}, "CFR201601192F81OGO", "dbs/T6t8AA==/colls/T6t8ALDFcwA=/"},
		{".NET user x86", []string{"dbs/T6t8AA==/colls/T6t8ALDFcwA=/", "dbs/T6t8AA==/colls/T6t8ANdyZQE=/"}, Options{Hash: FlavourDotnetX86, VirtualNodes: 128}, "CFR201601192F81OGO", "dbs/T6t8AA==/colls/T6t8ANdyZQE=/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			r, err := New(tc.links, &opts)
			require.NoError(t, err)
			got, err := r.ResolveForCreate(tc.key)
			require.NoError(t, err)
			assert.Equal(t, tc.expect, got)
			read, err := r.ResolveForRead(tc.key)
			require.NoError(t, err)
			assert.Equal(t, []string{tc.expect}, read)
		})
	}
}

func TestMurmur3Vector(t *testing.T) {
	assert.Equal(t, uint32(1099701186), murmur3([]byte("afdgdd"), 0))
	// Reference values of MurmurHash3_x86_32 (SMHasher).
	assert.Equal(t, uint32(0), murmur3(nil, 0))
	assert.Equal(t, uint32(0x514E28B7), murmur3(nil, 1))
	assert.Equal(t, uint32(0x248bfa47), murmur3([]byte("hello"), 0))
	assert.Equal(t, uint32(0x2e4ff723), murmur3([]byte("The quick brown fox jumps over the lazy dog"), 0))
}

func TestDotnetGetHashCode(t *testing.T) {
	assert.Equal(t, uint32(0xFFF561E1), uint32(dotnetHash32("hello")))
	assert.Equal(t, uint32(0xEC7BF82A), uint32(dotnetHash64("hello")))
	// Odd and even lengths and the empty string walk the terminator alike.
	for _, s := range []string{"", "a", "ab", "abc", "abcd", "abcde", "日本語", "😀x"} {
		assert.NotPanics(t, func() { dotnetHash32(s); dotnetHash64(s) }, s)
	}
}
