package redact_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/internal/redact"
	"github.com/docshard/docshard/store/memstore"
)

// The reproducers of issue 17 (%+v of cosmos.Options, %#v of
// cosmos.Account) and every other type that holds a key, each formatted
// with every verb, by value and by pointer, alone and inside a struct.
func TestNoVerbPrintsAKey(t *testing.T) {
	const key = "c2VjcmV0LWFjY291bnQta2V5LTAxMjM0NTY3ODk="
	const other = "b3RoZXItYWNjb3VudC1rZXktOTg3NjU0MzIxMA=="
	acct := cosmos.Account{Endpoint: "https://a.documents.azure.com:443/", Key: key}
	opts := cosmos.Options{Account: acct, Accounts: map[string]cosmos.Account{"dbs/x": {Endpoint: "https://b/", Key: other}}}
	sc := config.StoreConfig{Kind: config.StoreCosmos, Endpoint: "https://a/", Key: key}
	emuOpts := emulator.Options{Key: key}
	emu, err := emulator.New(memstore.New(nil), &emuOpts)
	require.NoError(t, err)
	ts := &emulatortest.Server{Endpoint: "http://127.0.0.1:1/", Key: key}
	values := map[string]any{
		"cosmos.Account":          acct,
		"*cosmos.Account":         &acct,
		"cosmos.Options":          opts,
		"*cosmos.Options":         &opts,
		"config.StoreConfig":      sc,
		"*config.StoreConfig":     &sc,
		"config.Config":           config.Config{Store: sc},
		"*config.Config":          &config.Config{Store: sc},
		"emulator.Options":        emuOpts,
		"*emulator.Options":       &emuOpts,
		"*emulator.Server":        emu,
		"*emulatortest.Server":    ts,
		"struct holding Options":  struct{ O cosmos.Options }{opts},
		"struct holding *Account": struct{ A *cosmos.Account }{&acct},
		"slice of Accounts":       []cosmos.Account{acct},
	}
	for name, v := range values {
		t.Run(name, func(t *testing.T) {
			assert.Empty(t, redact.Leaks(v, key, other))
		})
	}
}

// Leaks finds a key a type does not redact: the check can fail.
func TestLeaksFindsAPlainField(t *testing.T) {
	type plain struct{ Key string }
	assert.NotEmpty(t, redact.Leaks(plain{Key: "sekrit"}, "sekrit"))
	assert.NotEmpty(t, redact.Leaks(struct{ N []byte }{[]byte("sekrit")}, "sekrit"))
}
