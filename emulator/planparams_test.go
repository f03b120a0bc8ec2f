package emulator_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanBindsParameters: TOP, OFFSET and LIMIT given as parameters (the
// parameters' JSON as the SDKs send it) are bound in the gateway's plan,
// as the service binds them: a query-plan request (what the Node.js SDK
// asks first) gets "top", "offset" and "limit" as numbers, and a query
// sent across partitions is refused with that plan (sub-status 1004, what
// the Python SDK reads), not as a malformed TOP.
func TestPlanBindsParameters(t *testing.T) {
	srv := rawServer(t)
	const d = "/dbs/raw/colls/c/docs"
	body := []byte(`{"query":"SELECT TOP @n VALUE c.n FROM c WHERE c.n >= @lo ORDER BY c.n OFFSET @o LIMIT @l",` +
		`"parameters":[{"name":"@n","value":3},{"name":"@lo","value":1},{"name":"@o","value":2},{"name":"@l","value":4}]}`)
	var plan struct {
		QueryInfo struct {
			Top, Offset, Limit *int
		}
	}

	code, _, got := send(t, srv, rawRequest{method: "POST", path: d, body: body,
		header: queryHeader(map[string]string{"x-ms-cosmos-is-query-plan-request": "True", "x-ms-cosmos-supported-query-features": "OffsetAndLimit, OrderBy, Top"})})
	require.Equal(t, http.StatusOK, code, "the plan of a query with parameters: %s", got)
	require.NoError(t, json.Unmarshal(got, &plan))
	require.NotNil(t, plan.QueryInfo.Top)
	require.NotNil(t, plan.QueryInfo.Offset)
	require.NotNil(t, plan.QueryInfo.Limit)
	assert.Equal(t, []int{3, 2, 4}, []int{*plan.QueryInfo.Top, *plan.QueryInfo.Offset, *plan.QueryInfo.Limit})

	code, hdr, got := send(t, srv, rawRequest{method: "POST", path: d, body: body, header: queryHeader(nil)})
	require.Equal(t, http.StatusBadRequest, code, "%s", got)
	assert.Equal(t, "1004", hdr.Get("x-ms-substatus"), "refused with its plan: %s", got)
	var refusal struct{ AdditionalErrorInfo string }
	require.NoError(t, json.Unmarshal(got, &refusal))
	require.NoError(t, json.Unmarshal([]byte(refusal.AdditionalErrorInfo), &plan), "%s", got)
	require.NotNil(t, plan.QueryInfo.Top)
	assert.Equal(t, 3, *plan.QueryInfo.Top)

	// A parameter that is not a count is still the client's error.
	bad := []byte(`{"query":"SELECT TOP @n VALUE c.n FROM c ORDER BY c.n","parameters":[{"name":"@n","value":2.5}]}`)
	code, _, got = send(t, srv, rawRequest{method: "POST", path: d, body: bad, header: queryHeader(nil)})
	require.Equal(t, http.StatusBadRequest, code, "%s", got)
	assert.Contains(t, string(got), `TOP must be a non-negative integer, got 2.5`)
}
