package linkset

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
)

func TestCheckDistinct(t *testing.T) {
	assert.NoError(t, CheckDistinct("collections", []string{"dbs/a/colls/b", "dbs/a/colls/c"}))
	var ce *resolver.ConfigError
	err := CheckDistinct("collections", []string{"dbs/a/colls/b", "dbs/a/colls/c", "dbs/a/colls/b"})
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "collections[2]", ce.Field)
	assert.Contains(t, err.Error(), "also collections[0]")
	err = CheckDistinct("collections", []string{"dbs/a/colls/b", "bad"})
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "collections[1]", ce.Field)
	err = CheckDistinct("collections", nil)
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "collections", ce.Field)
}

func TestUnion(t *testing.T) {
	assert.Equal(t, []string{"a", "b", "c"}, Union([]string{"a", "b"}, nil, []string{"b", "c", "a"}))
	assert.Empty(t, Union())
}

func TestLinksCompareCanonically(t *testing.T) {
	err := CheckDistinct("collections", []string{"dbs/a/colls/b", "dbs/a/colls/c", "/dbs/a/colls/b/"})
	var ce *resolver.ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "collections[2]", ce.Field)
	assert.Contains(t, err.Error(), `also collections[0] "dbs/a/colls/b"`)
	// The .NET SDK's spelling is kept verbatim when it is the only one.
	assert.NoError(t, CheckDistinct("collections", []string{"dbs/T6t8AA==/colls/T6t8ALDFcwA=/", "dbs/T6t8AA==/colls/T6t8ANdyZQE=/"}))
	assert.Equal(t, []string{"/dbs/a/colls/b/", "dbs/a/colls/c"}, Union([]string{"/dbs/a/colls/b/"}, []string{"dbs/a/colls/b", "dbs/a/colls/c"}))
}
