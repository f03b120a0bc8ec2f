package cosmos

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/docshard/docshard/internal/redact"
)

// The reproducer of issue 17: %v of a *Store printed its options, key
// included. No verb does now.
func TestStoreFormatsWithoutKey(t *testing.T) {
	const key = "c2VjcmV0LWFjY291bnQta2V5LTAxMjM0NTY3ODk="
	s := &Store{opts: Options{Account: Account{Endpoint: "https://a/", Key: key}, Accounts: map[string]Account{"dbs/x": {Key: key + "2"}}}}
	assert.Empty(t, redact.Leaks(s, key))
	assert.Empty(t, redact.Leaks(struct{ S *Store }{s}, key))
	assert.Contains(t, s.String(), "https://a/")
}
