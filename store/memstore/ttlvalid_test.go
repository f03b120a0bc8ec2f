package memstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// TestTTLValidatedWhenOff: a document's "ttl" that is not -1 or 1 to
// 2^31-1 is refused (ErrBadRequest, naming the value) in a collection
// without a DefaultTTL as in one with it, as Cosmos DB refuses it; a valid
// one is stored and ignored.
func TestTTLValidatedWhenOff(t *testing.T) {
	s := New(nil)
	defer s.Close()
	def := 60
	for name, spec := range map[string]*store.CollectionSpec{"off": {}, "on": {DefaultTTL: &def}} {
		t.Run(name, func(t *testing.T) {
			l := newColl(t, s, spec)
			_, err := s.Create(ctx, l, []byte(`{"id":"ok","ttl":-1}`), nil)
			require.NoError(t, err)
			for _, bad := range []string{`0`, `-10`, `1.5`, `"10"`, `null`, `2147483648`} {
				_, err := s.Create(ctx, l, []byte(`{"id":"bad","ttl":`+bad+`}`), nil)
				require.ErrorIs(t, err, store.ErrBadRequest, "ttl %s", bad)
				assert.Contains(t, err.Error(), bad)
			}
		})
	}
}
