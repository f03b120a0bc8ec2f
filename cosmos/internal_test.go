package cosmos

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator"
	"github.com/docshard/docshard/internal/redact"
	"github.com/docshard/docshard/store"
)

func responseError(status int, header map[string]string) error {
	req, _ := http.NewRequest(http.MethodPost, "https://example.invalid/dbs/a/colls/b/docs", nil)
	resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"code":"x","message":"y"}`)), Request: req}
	for k, v := range header {
		resp.Header.Set(k, v)
	}
	return runtime.NewResponseError(resp)
}

func TestStatusMapping(t *testing.T) {
	cases := []struct {
		status int
		id     string
		want   error
	}{
		{400, "d", store.ErrBadRequest},
		{404, "d", store.ErrNotFound},
		{404, "", store.ErrCollectionNotFound},
		{409, "d", store.ErrConflict},
		{412, "d", store.ErrPreconditionFailed},
		{413, "d", store.ErrTooLarge},
		{429, "d", store.ErrThrottled},
		{401, "d", store.ErrUnavailable},
		{503, "d", store.ErrUnavailable},
	}
	for _, tc := range cases {
		err := mapErr("create", "dbs/a/colls/b", tc.id, responseError(tc.status, nil))
		assert.ErrorIs(t, err, tc.want, "status %d", tc.status)
		var se *store.Error
		require.True(t, errors.As(err, &se))
		assert.Equal(t, tc.status, se.Status)
	}
	err := mapErr("create", "dbs/a/colls/b", "d", responseError(429, map[string]string{"x-ms-retry-after-ms": "250"}))
	wait, ok := store.RetryAfter(err)
	assert.True(t, ok)
	assert.Equal(t, 250*time.Millisecond, wait)
	assert.ErrorIs(t, mapErr("read", "l", "d", errors.New("dial tcp: refused")), store.ErrUnavailable)

	// docshard serve's refusal of a stale epoch is not a failed If-Match.
	err = mapErr("create", "dbs/a/colls/b", "d", responseError(412, map[string]string{headerFence: "7"}))
	assert.ErrorIs(t, err, store.ErrFenced)
	assert.NotErrorIs(t, err, store.ErrPreconditionFailed)
	assert.Contains(t, err.Error(), "fence is 7")
}

func TestUsageHeader(t *testing.T) {
	n, ok := usageField("documentsSize=12;documentsCount=3;collectionSize=9", "documentsCount")
	assert.True(t, ok)
	assert.EqualValues(t, 3, n)
	_, ok = usageField("documentsSize=12", "documentsCount")
	assert.False(t, ok)
}

// TestExtensionHeaders: the backend speaks docshard serve's extension with
// the names the server answers.
func TestExtensionHeaders(t *testing.T) {
	assert.Equal(t, emulator.HeaderServe, headerServe)
	assert.Equal(t, emulator.HeaderEpoch, headerEpoch)
	assert.Equal(t, emulator.HeaderFence, headerFence)
	assert.Equal(t, emulator.HeaderRaiseFence, headerRaiseFence)
	assert.Equal(t, emulator.CodeFenced, codeFenced)
	assert.Equal(t, emulator.HeaderWholeQuery, headerWholeQuery)
}

// TestFromNowToken: the token FromNow starts from reads the whole range
// from "*", and only a token with a "*" range left still reads from now.
func TestFromNowToken(t *testing.T) {
	var tok compositeToken
	require.NoError(t, json.Unmarshal([]byte(fromNowToken()), &tok))
	require.Len(t, tok.Continuation, 1)
	assert.Equal(t, wholeRange.MinInclusive, tok.Continuation[0].MinInclusive)
	assert.Equal(t, wholeRange.MaxExclusive, tok.Continuation[0].MaxExclusive)
	assert.Equal(t, "*", string(*tok.Continuation[0].ContinuationToken))
	for _, tc := range []struct {
		token string
		want  bool
	}{
		{fromNowToken(), true},
		{`{"version":1,"resourceId":"r","continuation":[{"minInclusive":"","maxExclusive":"80","continuationToken":"\"7\""},{"minInclusive":"80","maxExclusive":"FF","continuationToken":"*"}]}`, true},
		{`{"version":1,"resourceId":"r","continuation":[{"minInclusive":"","maxExclusive":"FF","continuationToken":"\"7\""}]}`, false},
		{`{"version":1,"resourceId":"r","continuation":[{"minInclusive":"","maxExclusive":"FF"}]}`, false},
		{`not json`, false},
	} {
		assert.Equal(t, tc.want, readsFromNow(tc.token), tc.token)
	}
}

// The reproducer of issue 17: %v of a *Store printed its options, key
// included. No verb does now.
func TestStoreFormatsWithoutKey(t *testing.T) {
	const key = "c2VjcmV0LWFjY291bnQta2V5LTAxMjM0NTY3ODk="
	s := &Store{opts: Options{Account: Account{Endpoint: "https://a/", Key: key}, Accounts: map[string]Account{"dbs/x": {Key: key + "2"}}}}
	assert.Empty(t, redact.Leaks(s, key))
	assert.Empty(t, redact.Leaks(struct{ S *Store }{s}, key))
	assert.Contains(t, s.String(), "https://a/")
}
