package emulator

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/partitionkey"
)

// TestEffectiveKey pins effectiveKey to the official Node.js SDK's
// hashV2PartitionKey and hashMultiHashPartitionKey (@azure/cosmos 4.9.3,
// run on each value): the keys x-ms-start-epk and x-ms-end-epk are in.
func TestEffectiveKey(t *testing.T) {
	one, err := partitionkey.ParsePaths("/k")
	require.NoError(t, err)
	for _, tc := range []struct{ doc, want string }{
		{`{"k":"t1"}`, "3D48BB14DA9D090D22112C96695028B6"},
		{`{"k":""}`, "32E9366E637A71B4E710384B2F4970A0"},
		{`{"k":"a fairly long string that is longer than sixteen bytes, \u00e9"}`, "14F37B7C4E328D354794A24E5DB0CCAA"},
		{`{"k":0}`, "155B95BEDAC4B1E9EC1CDC9BB0DDDE58"},
		{`{"k":1}`, "20CD98B339BA78A5D0CF6953B87070B0"},
		{`{"k":-1.5}`, "151793206780805FF6E1DCAE6C787B6A"},
		{`{"k":1e300}`, "1234CB21048B20039B22F11DBB13CD7B"},
		{`{"k":5}`, "19C08621B135968252FB34B4CF66F811"},
		{`{"k":true}`, "0E711127C5B5A8E4726AC6DD306A3E59"},
		{`{"k":false}`, "2FE1BE91E90A3439635E0E9E37361EF2"},
		{`{"k":null}`, "378867E4430E67857ACE5C908374FE16"},
		{`{"other":1}`, "11622DAA78F835834610ABE56EFF5CB5"},
	} {
		got, err := effectiveKey(one, []byte(tc.doc))
		require.NoError(t, err, tc.doc)
		assert.Equal(t, tc.want, got, tc.doc)
	}
	three, err := partitionkey.ParsePaths("/a", "/b", "/c")
	require.NoError(t, err)
	for _, tc := range []struct{ doc, want string }{
		{`{"a":"eu","b":5,"c":true}`, "3F97C8ADBAFAA4A183E4E7F7EB9BE36E19C08621B135968252FB34B4CF66F8110E711127C5B5A8E4726AC6DD306A3E59"},
		{`{"a":"x","b":null}`, "11E3F358618BE9AA5BAFF4C7C74F0716378867E4430E67857ACE5C908374FE1611622DAA78F835834610ABE56EFF5CB5"},
	} {
		got, err := effectiveKey(three, []byte(tc.doc))
		require.NoError(t, err, tc.doc)
		assert.Equal(t, tc.want, got, tc.doc)
	}
}
