package link

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCollection(t *testing.T) {
	for in, want := range map[string]Collection{
		"dbs/a/colls/b":                    {"a", "b"},
		"/dbs/a/colls/b/":                  {"a", "b"},
		"dbs/T6t8AA==/colls/T6t8ALDFcwA=/": {"T6t8AA==", "T6t8ALDFcwA="},
	} {
		got, err := ParseCollection(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, bad := range []string{"", "/", "dbs/a", "dbs//colls/b", "dbs/a/colls/", "dbs/a/colls/b/docs/c", "colls/b", "dbs/a?/colls/b", "dbs/a/colls/b#", "dbs/a/x/colls/b"} {
		_, err := ParseCollection(bad)
		assert.ErrorIs(t, err, ErrInvalid, bad)
	}
}

func TestCanonical(t *testing.T) {
	in := "dbs/a/colls/b"
	out, err := Canonical(in)
	require.NoError(t, err)
	assert.Equal(t, in, out)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = Canonical(in) }), "a canonical link costs no allocation")
	out, err = Canonical("/dbs/a/colls/b/")
	require.NoError(t, err)
	assert.Equal(t, "dbs/a/colls/b", out)
}

func TestDatabase(t *testing.T) {
	db, err := ParseDatabase("dbs/app/")
	require.NoError(t, err)
	assert.Equal(t, "app", db)
	_, err = ParseDatabase("dbs/app/colls/x")
	assert.ErrorIs(t, err, ErrInvalid)
	l, err := DatabaseOf("dbs/app/colls/x")
	require.NoError(t, err)
	assert.Equal(t, "dbs/app", l)
	assert.True(t, Same("/dbs/a/colls/b/", "dbs/a/colls/b"))
}
