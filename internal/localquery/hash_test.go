package localquery

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// referenceHash is the token hash as first written, with hash/fnv and
// encoding/json: tokens written by earlier versions (the embedded store's, through
// docshard serve too) must still match.
func referenceHash(uid string, q store.Query, pk string) string {
	params := append([]store.Param(nil), q.Parameters...)
	sort.SliceStable(params, func(i, j int) bool { return params[i].Name < params[j].Name })
	pj, _ := json.Marshal(params)
	h := fnv.New128a()
	for _, part := range []string{uid, q.Text, string(pj), pk} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestQueryHashIsStable(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    store.Query
		pk   string
	}{
		{"no parameters", store.Query{Text: "SELECT * FROM c"}, ""},
		{"key", store.Query{Text: "SELECT * FROM c"}, `["a"]`},
		{"parameters", store.Query{Text: "SELECT * FROM c WHERE c.n = @n AND c.s = @s", Parameters: []store.Param{{Name: "@s", Value: "x"}, {Name: "@n", Value: 3}}}, ""},
		{"empty parameters", store.Query{Text: "SELECT 1", Parameters: []store.Param{}}, ""},
		{"long text", store.Query{Text: fmt.Sprintf("SELECT * FROM c WHERE c.id IN (%0500d)", 7)}, "é"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Hash("uid-1", tc.q, tc.pk)
			require.NoError(t, err)
			assert.Equal(t, referenceHash("uid-1", tc.q, tc.pk), got.String())
		})
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = Hash("u", store.Query{Text: "SELECT * FROM c"}, "k") })
	assert.Zero(t, allocs, "a parameterless hash allocates nothing (its String allocates the text)")
}
