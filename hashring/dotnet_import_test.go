package hashring

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
)

func TestFromDotNet(t *testing.T) {
	// The .NET vectors' links (TestVectors): keys must land where the .NET
	// SDK put them, in a 64-bit and in a 32-bit process.
	const serialised = `{"PartitionKeyPropertyName":"UserId","CollectionLinks":["dbs/T6t8AA==/colls/T6t8ALDFcwA=/","dbs/T6t8AA==/colls/T6t8ANdyZQE=/"],"NumberOfVirtualNodesPerCollection":128,"PartitionKeyExtractor":null}`
	for _, tc := range []struct{ flavour, want string }{
		{"x64", "dbs/T6t8AA==/colls/T6t8ALDFcwA=/"},
		{"dotnet-x64", "dbs/T6t8AA==/colls/T6t8ALDFcwA=/"},
		{"x86", "dbs/T6t8AA==/colls/T6t8ANdyZQE=/"},
	} {
		r, err := FromDotNet([]byte(serialised), tc.flavour)
		require.NoError(t, err, tc.flavour)
		got, err := r.ResolveForCreate("CFR201601192F81OGO")
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, tc.flavour)
		key, err := r.PartitionKey([]byte(`{"id":"1","UserId":"CFR201601192F81OGO"}`))
		require.NoError(t, err)
		assert.Equal(t, "CFR201601192F81OGO", key)
		assert.Equal(t, 128, r.VirtualNodes())
	}

	r, err := FromDotNet([]byte(`{"PartitionKeyPropertyName":"user name","CollectionLinks":["dbs/a/colls/b"]}`), "x64")
	require.NoError(t, err)
	assert.Equal(t, DefaultVirtualNodesLegacy, r.VirtualNodes(), "the SDK's default")
	key, err := r.PartitionKey([]byte(`{"id":"1","user name":"bo"}`))
	require.NoError(t, err)
	assert.Equal(t, "bo", key, "a name that is no identifier is quoted in the path")

	for _, tc := range []struct{ name, data, flavour, want string }{
		{"flavour", `{}`, "arm64", `want "x64" or "x86"`},
		{"no links", `{"PartitionKeyPropertyName":"id"}`, "x64", "CollectionLinks"},
		{"no key", `{"CollectionLinks":["dbs/a/colls/b"]}`, "x64", "key-extractor function"},
		{"not json", `{"CollectionLinks":`, "x86", "not the JSON"},
		{"negative", `{"PartitionKeyPropertyName":"id","CollectionLinks":["dbs/a/colls/b"],"NumberOfVirtualNodesPerCollection":-1}`, "x64", "NumberOfVirtualNodesPerCollection"},
	} {
		_, err := FromDotNet([]byte(tc.data), tc.flavour)
		require.ErrorIs(t, err, resolver.ErrInvalid, tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
}
