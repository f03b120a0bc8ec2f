package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
)

// TestIDsAsTheGatewayReadsThem: every id the service creates is created
// (201), and point operations over HTTP answer what the service's gateway
// answers for it (azcosmos's TestItemIdEncodingRoutingGW): ids that end in
// a space, hold '/', '\', '#' or an escape sequence are read by the
// gateway as another resource link than the SDK signed (401); ids holding
// CR, LF or Tab make an invalid URL (400). A query finds every one.
func TestIDsAsTheGatewayReadsThem(t *testing.T) {
	srv := emulatortest.Shared(t)
	cc := newContainer(t, newClient(t, srv), "/pk")
	ctx := context.Background()
	cases := []struct {
		id   string
		want int // read, replace; delete is 204 where this is 200
	}{
		{"Test", http.StatusOK},
		{"This is a test", http.StatusOK},
		{" Test", http.StatusOK},
		{"Test ", http.StatusUnauthorized},
		{"Test  ", http.StatusUnauthorized},
		{"WithAllowedSpecial,=.:~+-@()^${}[]!_Chars", http.StatusOK},
		{"BQE1D3PdG4N4bzU9TKaCIM3qc0TVcZ2-Y3jnsRfwdHC1ombkX3F1dot-SG0-UTq9AbgdX3kOWoP6qL6lJqWeKgV3zwWWPZO-t5X0ehJzv9LGkWld07LID2rhWhGT6huBM6Q=", http.StatusOK},
		{"IdEndingWithPercentEncodedWhitespace%20", http.StatusUnauthorized},
		{"WithPercentEncodedSpecialChar%E9%B1%80", http.StatusUnauthorized},
		{"Disallowed?Chars", http.StatusOK},
		{"Disallowed/Chars", http.StatusUnauthorized},
		{"Disallowed\\Chars", http.StatusUnauthorized},
		{"Disallowed#Chars", http.StatusUnauthorized},
		{"With\rCarriageReturn", http.StatusBadRequest},
		{"With\tTab", http.StatusBadRequest},
		{"With\nLineFeed", http.StatusBadRequest},
		{"WithUnicode鱀", http.StatusOK},
		{"100%", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			pk := azcosmos.NewPartitionKeyString(tc.id)
			body, err := json.Marshal(map[string]string{"id": tc.id, "pk": tc.id})
			require.NoError(t, err)
			_, err = cc.CreateItem(ctx, pk, body, nil)
			require.NoError(t, err, "the service creates it")
			got := func(err error, ok int) int {
				if err != nil {
					return status(err)
				}
				return ok
			}
			_, err = cc.ReadItem(ctx, pk, tc.id, nil)
			assert.Equal(t, tc.want, got(err, http.StatusOK), "read")
			_, err = cc.ReplaceItem(ctx, pk, tc.id, body, nil)
			assert.Equal(t, tc.want, got(err, http.StatusOK), "replace")
			found := queryAll(t, cc, "SELECT VALUE c.id FROM c WHERE c.id = @id", pk,
				&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@id", Value: tc.id}}})
			assert.Len(t, found, 1, "a query finds it")
			wantDelete := tc.want
			if wantDelete == http.StatusOK {
				wantDelete = http.StatusNoContent
			}
			_, err = cc.DeleteItem(ctx, pk, tc.id, nil)
			assert.Equal(t, wantDelete, got(err, http.StatusNoContent), "delete")
		})
	}
}
