package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
)

// echoResolver is a minimal kind for these tests: it remembers its
// definition so the test can see exactly what reached the decoder.
type echoResolver struct {
	def map[string]any
}

func (e echoResolver) PartitionKey(any) (any, error)        { return nil, resolver.ErrNoPartitionKey }
func (e echoResolver) ResolveForCreate(any) (string, error) { return "dbs/a/colls/b", nil }
func (e echoResolver) ResolveForRead(any) ([]string, error) { return []string{"dbs/a/colls/b"}, nil }
func (e echoResolver) MarshalJSON() ([]byte, error)         { return json.Marshal(e.def) }

// keylessResolver reads keys by a definition of its own, left empty.
type keylessResolver struct{ echoResolver }

func (keylessResolver) KeyDef() resolver.KeyDef { return resolver.KeyDef{} }

func init() {
	resolver.Register("configtest-keyless", func([]byte) (resolver.Resolver, error) { return keylessResolver{}, nil })
	resolver.Register("configtest-echo", func(data []byte) (resolver.Resolver, error) {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		if bad, ok := m["bad"]; ok {
			return nil, resolver.Invalid("bad", bad, "rejected by the test kind")
		}
		return echoResolver{def: m}, nil
	})
}

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestLoadFormatsKeepCase(t *testing.T) {
	files := map[string]string{
		"c.yaml": `
store:
  kind: embedded
  path: ./data
databases:
  - link: dbs/app
    resolver: {kind: configtest-echo, partitionKey: /tenantId, entries: {BigCorp: dbs/app/colls/Big}}
`,
		"c.json": `{"store": {"kind": "embedded", "path": "./data"},
 "databases": [{"link": "dbs/app", "resolver": {"kind": "configtest-echo", "partitionKey": "/tenantId", "entries": {"BigCorp": "dbs/app/colls/Big"}}}]}`,
		"c.toml": `
[store]
kind = "embedded"
path = "./data"

[[databases]]
link = "dbs/app"
[databases.resolver]
kind = "configtest-echo"
partitionKey = "/tenantId"
entries = { BigCorp = "dbs/app/colls/Big" }
`,
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			path := write(t, name, content)
			cfg, err := Load(path)
			require.NoError(t, err)
			assert.Equal(t, StoreEmbedded, cfg.Store.Kind)
			assert.Equal(t, filepath.Join(filepath.Dir(path), "data"), cfg.Store.Path, "relative to the file")
			require.Len(t, cfg.Databases, 1)
			db := cfg.Databases[0]
			assert.Equal(t, "dbs/app", db.Link)
			def := db.Resolver.(echoResolver).def
			assert.Equal(t, "/tenantId", def["partitionKey"], "field names keep their case")
			assert.Equal(t, map[string]any{"BigCorp": "dbs/app/colls/Big"}, def["entries"], "map keys keep their case")
		})
	}
}

func TestEnvOverridesAndKey(t *testing.T) {
	t.Setenv("DOCSHARD_STORE_KIND", "cosmos")
	t.Setenv("DOCSHARD_STORE_ENDPOINT", "https://acct.documents.azure.com:443/")
	t.Setenv("DOCSHARD_STORE_KEY", "c2VjcmV0")
	cfg, err := Load(write(t, "c.yaml", "store: {kind: embedded}\n"))
	require.NoError(t, err)
	assert.Equal(t, StoreCosmos, cfg.Store.Kind)
	assert.Equal(t, "https://acct.documents.azure.com:443/", cfg.Store.Endpoint)
	assert.Equal(t, "c2VjcmV0", cfg.Store.Key)
	for _, s := range []string{cfg.Store.String(), cfg.Store.GoString()} {
		assert.NotContains(t, s, "c2VjcmV0", "the key is never printed")
	}
}

func TestDatabaseSelection(t *testing.T) {
	cfg, err := Parse([]byte(`
databases:
  - {link: dbs/a, resolver: {kind: configtest-echo}}
  - {link: dbs/b, resolver: {kind: configtest-echo}}
`), "yaml")
	require.NoError(t, err)
	_, err = cfg.Database("")
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "--db")
	db, err := cfg.Database("dbs/b/")
	require.NoError(t, err)
	assert.Equal(t, "dbs/b", db.Link)
	_, err = cfg.Database("dbs/zz")
	assert.ErrorContains(t, err, `no database "dbs/zz"`)
}

func TestBadConfig(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"malformed", "store: [", "malformed yaml"},
		{"key in file", "store: {key: abc}", "store.key must not be written in the file"},
		{"unknown store setting", "store: {kind: embedded, colour: red}", "unknown setting store.colour"},
		{"unknown top-level", "stores: {}", "unknown setting stores"},
		{"bad kind", "store: {kind: redis}", `store.kind = "redis"`},
		{"cosmos without endpoint", "store: {kind: cosmos}", "store.endpoint is required"},
		{"databases not a list", "databases: {link: dbs/a}", "databases must be a list"},
		{"bad link", "databases: [{link: app, resolver: {kind: configtest-echo}}]", "databases[0].link = app"},
		{"duplicate link", "databases: [{link: dbs/a, resolver: {kind: configtest-echo}}, {link: dbs/a/, resolver: {kind: configtest-echo}}]", "repeats databases[0]"},
		{"no resolver", "databases: [{link: dbs/a}]", "resolver is missing"},
		{"unknown db field", "databases: [{link: dbs/a, resolver: {kind: configtest-echo}, colour: red}]", "databases[0].colour: unknown field"},
		{"unknown kind", "databases: [{link: dbs/a, resolver: {kind: nope}}]", "resolver.kind"},
		{"resolver field error", "databases: [{link: dbs/a, resolver: {kind: configtest-echo, bad: 7}}]", "resolver.bad"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "yaml")
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalid), "wraps ErrInvalid: %v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorContains(t, err, "no such file")
	_, err = Load(write(t, "c.ini", "x=1"))
	assert.ErrorContains(t, err, `unknown file type ".ini"`)
}

// TestStorePathRelativeToFile: a relative store.path in a file is taken
// relative to the file's directory, wherever the command runs; an absolute
// one as it is; one from DOCSHARD_STORE_PATH relative to the working
// directory.
func TestStorePathRelativeToFile(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "work")
	require.NoError(t, os.MkdirAll(sub, 0o700))
	path := filepath.Join(sub, "app.yaml")
	require.NoError(t, os.WriteFile(path, []byte("store: {path: data}\n"), 0o600))
	t.Chdir(dir)
	cfg, err := Load("work/app.yaml")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("work", "data"), cfg.Store.Path)

	abs := filepath.Join(dir, "elsewhere")
	require.NoError(t, os.WriteFile(path, []byte("store: {path: "+abs+"}\n"), 0o600))
	cfg, err = Load(path)
	require.NoError(t, err)
	assert.Equal(t, abs, cfg.Store.Path)

	t.Setenv("DOCSHARD_STORE_PATH", "from-env")
	cfg, err = Load(path)
	require.NoError(t, err)
	assert.Equal(t, "from-env", cfg.Store.Path)
}

// TestMissingPartitionKey: a resolver that reads keys by a path of its own
// and has none is refused when the file is loaded, naming the field.
func TestMissingPartitionKey(t *testing.T) {
	_, err := Load(write(t, "c.yaml", "databases:\n  - link: dbs/app\n    resolver: {kind: configtest-keyless}\n"))
	require.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "databases[0] (dbs/app): resolver.partitionKey is missing")
}
