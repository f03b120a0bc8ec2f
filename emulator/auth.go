package emulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultKey is the well-known account key of the Azure Cosmos DB
// emulator, which docshard serve accepts unless it is given another. It is
// public: it protects nothing, and only a loopback server should use it.
const DefaultKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// maxClockSkew is how far a request's x-ms-date may be from the server's
// clock, as Cosmos DB allows.
const maxClockSkew = 15 * time.Minute

// signingTarget returns the resource type and resource link a request
// over the path's segments is signed with. A feed ("dbs", "dbs/a/colls")
// is signed with its own type and its parent's link; an item
// ("dbs/a/colls/b") with its type and its whole link; the account ("") with
// both empty.
func signingTarget(segs []string) (resType, resLink string) {
	n := len(segs)
	switch {
	case n == 0:
		return "", ""
	case n%2 == 1:
		return segs[n-1], strings.Join(segs[:n-1], "/")
	}
	return segs[n-2], strings.Join(segs, "/")
}

// stringToSign is the text the master-key signature covers.
func stringToSign(verb, resType, resLink, date string) string {
	return strings.ToLower(verb) + "\n" + strings.ToLower(resType) + "\n" + resLink + "\n" + strings.ToLower(date) + "\n\n"
}

// authorize checks the request's master-key signature (Authorization:
// url-encoded "type=master&ver=1.0&sig=BASE64") over the verb, resource
// type, resource link and date, and that the date is within 15 minutes of
// now.
func (s *Server) authorize(r *http.Request, resType, resLink string) *apiError {
	raw := r.Header.Get("Authorization")
	if raw == "" {
		return errorf(http.StatusUnauthorized, "Required Header authorization is missing. Ensure a valid Authorization token is passed.")
	}
	// The SDKs URL-encode the token; one that did not keeps its '+'.
	token := raw
	if strings.Contains(raw, "%") {
		if t, err := url.QueryUnescape(raw); err == nil {
			token = t
		}
	}
	fields := map[string]string{}
	for _, part := range strings.Split(token, "&") {
		k, v, _ := strings.Cut(part, "=")
		fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	switch typ := fields["type"]; {
	case typ == "aad" || typ == "resource":
		return errorf(http.StatusUnauthorized, "authorization type %q is not accepted: docshard serve checks master-key signatures only (type=master)", typ)
	case typ != "master":
		return errorf(http.StatusUnauthorized, "The input authorization token can't serve the request: want type=master&ver=1.0&sig=SIGNATURE, got type %q", typ)
	case fields["ver"] != "1.0":
		return errorf(http.StatusUnauthorized, "The input authorization token can't serve the request: token version %q, want 1.0", fields["ver"])
	}
	date := r.Header.Get("x-ms-date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	if date == "" {
		return errorf(http.StatusUnauthorized, "The input authorization token can't serve the request: the request has neither x-ms-date nor Date.")
	}
	payload := stringToSign(r.Method, resType, resLink, date)
	sig, err := base64.StdEncoding.DecodeString(fields["sig"])
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(payload))
	if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		return errorf(http.StatusUnauthorized, "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. Server used the following payload to sign: '%s'", strings.ReplaceAll(payload, "\n", `\n`))
	}
	when, err := http.ParseTime(date)
	if err != nil {
		return errorf(http.StatusUnauthorized, "The input authorization token can't serve the request: the date %q is not an HTTP date (RFC 1123)", date)
	}
	now := s.now()
	if d := now.Sub(when); d > maxClockSkew || d < -maxClockSkew {
		return errorf(http.StatusUnauthorized, "The authorization token is not valid at the current time. Please create another token and retry (token start time: %s, token expiry time: %s, current server time: %s).",
			when.UTC().Format(http.TimeFormat), when.Add(maxClockSkew).UTC().Format(http.TimeFormat), now.UTC().Format(http.TimeFormat))
	}
	return nil
}
