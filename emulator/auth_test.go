package emulator_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator"
	"github.com/docshard/docshard/store/memstore"
)

// emulatorToken makes an Entra ID token as azcosmos's emulator tests do
// (emulatorTokenCredential): a JWT with kid CosmosEmulatorPrimaryMaster
// whose third part is the account key's base64 text, base64url-encoded.
func emulatorToken(kid, key string, nbf, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	header := `{"typ":"JWT","alg":"RS256","x5t":"` + kid + `","kid":"` + kid + `"}`
	claims := `{"appid":"localhost","tid":"EmulatorFederation","nbf":` + strconv.FormatInt(nbf.Unix(), 10) +
		`,"exp":` + strconv.FormatInt(exp.Unix(), 10) + `,"aud":"https://localhost.localhost"}`
	return enc([]byte(header)) + "." + enc([]byte(claims)) + "." + enc([]byte(key))
}

func TestEmulatorTokens(t *testing.T) {
	now := time.Now()
	other := base64.StdEncoding.EncodeToString([]byte("another key of the test"))
	valid := emulatorToken(emulator.EmulatorTokenKeyID, emulator.DefaultKey, now, now.Add(2*time.Hour))
	cases := []struct {
		name  string
		opts  *emulator.Options
		token string
		want  int
	}{
		{"the well-known key accepts its token", nil, valid, http.StatusOK},
		{"another kid", nil, emulatorToken("someone", emulator.DefaultKey, now, now.Add(time.Hour)), http.StatusUnauthorized},
		{"another key in the token", nil, emulatorToken(emulator.EmulatorTokenKeyID, other, now, now.Add(time.Hour)), http.StatusUnauthorized},
		{"expired", nil, emulatorToken(emulator.EmulatorTokenKeyID, emulator.DefaultKey, now.Add(-3*time.Hour), now.Add(-time.Hour)), http.StatusUnauthorized},
		{"not yet valid", nil, emulatorToken(emulator.EmulatorTokenKeyID, emulator.DefaultKey, now.Add(time.Hour), now.Add(2*time.Hour)), http.StatusUnauthorized},
		{"not a JWT", nil, "eyJ0eXAiOiJKV1Qi", http.StatusUnauthorized},
		{"a JWT of garbage", nil, "a.b.c", http.StatusUnauthorized},
		// Anyone can mint a token of a key they know, and each request
		// shows the key: with a key of its own the server refuses them
		// unless told otherwise.
		{"another server key refuses tokens", &emulator.Options{Key: other}, emulatorToken(emulator.EmulatorTokenKeyID, other, now, now.Add(time.Hour)), http.StatusUnauthorized},
		{"AcceptEmulatorTokens accepts its key's token", &emulator.Options{Key: other, AcceptEmulatorTokens: true},
			emulatorToken(emulator.EmulatorTokenKeyID, other, now, now.Add(time.Hour)), http.StatusOK},
		{"AcceptEmulatorTokens refuses the well-known key's", &emulator.Options{Key: other, AcceptEmulatorTokens: true}, valid, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := emulator.New(memstore.New(nil), tc.opts)
			require.NoError(t, err)
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("x-ms-date", now.UTC().Format(http.TimeFormat))
			r.Header.Set("Authorization", url.QueryEscape("type=aad&ver=1.0&sig="+tc.token))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, tc.want, w.Code, w.Body.String())
			if tc.want != http.StatusOK {
				assert.Contains(t, w.Body.String(), `"code":"Unauthorized"`)
			}
		})
	}
}

func TestAccountAsTheOfficialEmulator(t *testing.T) {
	h, err := emulator.New(memstore.New(nil), nil)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	port := u.Port()
	cases := []struct{ host, want string }{
		// The official emulator answers its own address where the client
		// said localhost.
		{"localhost:" + port, "http://127.0.0.1:" + port + "/"},
		{"127.0.0.1:" + port, "http://127.0.0.1:" + port + "/"},
		{"cosmos.test:" + port, "http://cosmos.test:" + port + "/"},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			req, err := http.NewRequest("GET", srv.URL+"/", nil)
			require.NoError(t, err)
			req.Host = tc.host
			date := time.Now().UTC().Format(http.TimeFormat)
			req.Header.Set("x-ms-date", date)
			key, _ := base64.StdEncoding.DecodeString(emulator.DefaultKey)
			req.Header.Set("Authorization", url.QueryEscape("type=master&ver=1.0&sig="+signature(key, "GET", "", "", date)))
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var account struct {
				Writable []struct{ Name, DatabaseAccountEndpoint string } `json:"writableLocations"`
				Readable []struct{ Name, DatabaseAccountEndpoint string } `json:"readableLocations"`
				Policy   struct{ DefaultConsistencyLevel string }         `json:"userConsistencyPolicy"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&account))
			require.Len(t, account.Writable, 1)
			require.Len(t, account.Readable, 1)
			assert.Equal(t, tc.want, account.Writable[0].DatabaseAccountEndpoint)
			assert.Equal(t, account.Writable, account.Readable)
			assert.Equal(t, "South Central US", account.Writable[0].Name)
			assert.Equal(t, "Strong", account.Policy.DefaultConsistencyLevel)
		})
	}
}
