package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/redact"
)

// TestStoreAccounts: store.accounts binds databases and collections to
// other accounts, in every format, each key read from the variable its
// keyEnv names and never printed.
func TestStoreAccounts(t *testing.T) {
	const keyB = "a2V5LW9mLWFjY291bnQtYg=="
	t.Setenv("DOCSHARD_KEY_B", keyB)
	want := []Account{
		{Bind: "dbs/app/colls/u2", Endpoint: "https://b.documents.azure.com:443/", KeyEnv: "DOCSHARD_KEY_B", Key: keyB},
		{Bind: "dbs/logs", Endpoint: "http://127.0.0.1:8082/"},
	}
	files := map[string]string{
		"c.yaml": `store:
  kind: cosmos
  endpoint: http://127.0.0.1:8081/
  accounts:
    - {bind: dbs/app/colls/u2, endpoint: "https://b.documents.azure.com:443/", keyEnv: DOCSHARD_KEY_B}
    - {bind: dbs/logs, endpoint: "http://127.0.0.1:8082/"}
`,
		"c.json": `{"store": {"kind": "cosmos", "endpoint": "http://127.0.0.1:8081/", "accounts": [
  {"bind": "dbs/app/colls/u2", "endpoint": "https://b.documents.azure.com:443/", "keyEnv": "DOCSHARD_KEY_B"},
  {"bind": "dbs/logs", "endpoint": "http://127.0.0.1:8082/"}]}}`,
		"c.toml": `[store]
kind = "cosmos"
endpoint = "http://127.0.0.1:8081/"
[[store.accounts]]
bind = "dbs/app/colls/u2"
endpoint = "https://b.documents.azure.com:443/"
keyEnv = "DOCSHARD_KEY_B"
[[store.accounts]]
bind = "dbs/logs"
endpoint = "http://127.0.0.1:8082/"
`,
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			cfg, err := Load(write(t, name, content))
			require.NoError(t, err)
			assert.Equal(t, want, cfg.Store.Accounts)
			assert.Empty(t, redact.Leaks(cfg.Store, keyB))
			assert.Empty(t, redact.Leaks(cfg.Store.Accounts[0], keyB))
			assert.Empty(t, redact.Leaks(cfg, keyB))
			assert.Contains(t, cfg.Store.String(), "dbs/app/colls/u2 at https://b.documents.azure.com:443/ key=***")
		})
	}
}

// TestBadStoreAccounts: each mistake in store.accounts is refused with an
// error naming the entry and the field.
func TestBadStoreAccounts(t *testing.T) {
	const head = "store:\n  kind: cosmos\n  endpoint: http://127.0.0.1:8081/\n  accounts:\n"
	tests := []struct{ name, file, want string }{
		{"a key in the file", head + "    - {bind: dbs/app, endpoint: http://127.0.0.1:8082/, key: c2VjcmV0}\n", "store.accounts[0].key must not be written in the file"},
		{"an unknown field", head + "    - {bind: dbs/app, endpoint: http://127.0.0.1:8082/, region: west}\n", "store.accounts[0].region: unknown field"},
		{"not a link", head + "    - {bind: app, endpoint: http://127.0.0.1:8082/}\n", `store.accounts[0].bind = "app": want a database link`},
		{"a repeated bind", head + "    - {bind: dbs/app, endpoint: http://127.0.0.1:8082/}\n    - {bind: /dbs/app/, endpoint: http://127.0.0.1:8083/}\n", "store.accounts[1].bind \"/dbs/app/\" repeats store.accounts[0]"},
		{"no endpoint", head + "    - {bind: dbs/app}\n", "store.accounts[0] (dbs/app): endpoint is missing"},
		{"not a list", head + "    bind: dbs/app\n", "store.accounts must be a list"},
		{"not a string", head + "    - {bind: dbs/app, endpoint: 8082}\n", "store.accounts[0].endpoint = 8082: want a string"},
		{"the embedded store", "store:\n  kind: embedded\n  accounts:\n    - {bind: dbs/app, endpoint: http://127.0.0.1:8082/}\n", "store.accounts binds Cosmos DB accounts: it needs store.kind cosmos"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(write(t, "c.yaml", tt.file))
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
