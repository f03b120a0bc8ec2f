package provision_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/provision"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
)

func TestCheckPrefix(t *testing.T) {
	for _, tc := range []struct{ name, prefix, err string }{
		{"plain", "log", ""},
		{"longest", strings.Repeat("p", provision.MaxPrefix), ""},
		{"empty", "", "missing: the collections are named by it"},
		{"slash", "a/b", `must not contain / \ ? or #`},
		{"hash", "a#b", `must not contain / \ ? or #`},
		{"docshard's own", "_x", "must not start with _"},
		{"too long", strings.Repeat("p", provision.MaxPrefix+1), "longer than 200 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := provision.CheckPrefix(tc.prefix, "the collections are named by it")
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			var ce *resolver.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "collectionPrefix", ce.Field)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestTemplate(t *testing.T) {
	ttl := 60
	key := resolver.MustKeyDef("/u")
	for _, tc := range []struct {
		name string
		spec *store.CollectionSpec
		key  resolver.KeyDef
		want store.CollectionSpec
		err  bool
	}{
		{"none", nil, key, store.CollectionSpec{PartitionKeyPath: "/u"}, false},
		{"none, no key", nil, resolver.KeyDef{}, store.CollectionSpec{}, false},
		{"ttl", &store.CollectionSpec{DefaultTTL: &ttl}, key, store.CollectionSpec{DefaultTTL: &ttl, PartitionKeyPath: "/u"}, false},
		{"the key's path", &store.CollectionSpec{PartitionKeyPath: "/u"}, key, store.CollectionSpec{PartitionKeyPath: "/u"}, false},
		{"the key's path, quoted", &store.CollectionSpec{PartitionKeyPath: `/"u"`}, key, store.CollectionSpec{PartitionKeyPath: "/u"}, false},
		{"another path", &store.CollectionSpec{PartitionKeyPath: "/v"}, key, store.CollectionSpec{}, true},
		{"a path without a key", &store.CollectionSpec{PartitionKeyPath: "/v"}, resolver.KeyDef{}, store.CollectionSpec{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := provision.Template(tc.spec, tc.key)
			if tc.err {
				var ce *resolver.ConfigError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, "template.partitionKeyPath", ce.Field)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestJSONAndProvision(t *testing.T) {
	ttl := 60
	assert.Nil(t, provision.JSON(store.CollectionSpec{PartitionKeyPath: "/u"}), "the key path alone is the resolver's partitionKey")
	withTTL := store.CollectionSpec{PartitionKeyPath: "/u", DefaultTTL: &ttl}
	assert.Equal(t, &store.CollectionSpec{DefaultTTL: &ttl}, provision.JSON(withTTL))
	assert.Equal(t, "/u", withTTL.PartitionKeyPath, "the template itself is unchanged")

	p := provision.Provision(withTTL, []string{"dbs/a/colls/c1"}, []string{"dbs/a/colls/c0"}, "sealed")
	assert.Equal(t, []string{"dbs/a/colls/c1"}, p.Create)
	assert.Equal(t, []string{"dbs/a/colls/c0"}, p.Keep)
	assert.Equal(t, "sealed", p.KeepReason)
	assert.Equal(t, "/u", p.KeyPath)
	var back store.CollectionSpec
	require.NoError(t, json.Unmarshal(p.Template, &back))
	assert.Equal(t, store.CollectionSpec{DefaultTTL: &ttl}, back)
}
