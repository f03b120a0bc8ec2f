package emulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
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
	case n == 2 && segs[0] == "offers":
		// An offer is addressed by its _rid: the SDKs sign that alone, in
		// lower case.
		return "offers", strings.ToLower(segs[1])
	case n%2 == 1:
		return segs[n-1], strings.Join(segs[:n-1], "/")
	}
	return segs[n-2], strings.Join(segs, "/")
}

// stringToSign is the text the master-key signature covers.
func stringToSign(verb, resType, resLink, date string) string {
	return string(appendStringToSign(nil, verb, resType, resLink, date))
}

// appendStringToSign appends the text the master-key signature covers:
// the verb, resource type and date in lower case, the link as it is.
func appendStringToSign(b []byte, verb, resType, resLink, date string) []byte {
	b = appendLower(b, verb)
	b = append(b, '\n')
	b = appendLower(b, resType)
	b = append(b, '\n')
	b = append(b, resLink...)
	b = append(b, '\n')
	b = appendLower(b, date)
	return append(b, "\n\n"...)
}

// appendLower appends s in lower case (ASCII only: verbs, resource types
// and HTTP dates are ASCII; other bytes are copied as they are, which makes
// a signature over them fail, as it should).
func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

var errSignatureLength = errors.New("the signature is longer than a SHA-256 HMAC")

// token is a parsed Authorization header: type=master&ver=1.0&sig=BASE64.
type token struct {
	typ, ver, sig string
}

// parseToken reads the fields of an Authorization token, URL-decoded when
// it is encoded (the SDKs encode it; one that is not keeps its '+').
func parseToken(raw string) token {
	if strings.Contains(raw, "%") {
		if t, err := url.QueryUnescape(raw); err == nil {
			raw = t
		}
	}
	var t token
	for part := range strings.SplitSeq(raw, "&") {
		k, v, _ := strings.Cut(part, "=")
		v = strings.TrimSpace(v)
		switch k = strings.TrimSpace(k); {
		case strings.EqualFold(k, "type"):
			t.typ = v
		case strings.EqualFold(k, "ver"):
			t.ver = v
		case strings.EqualFold(k, "sig"):
			t.sig = v
		}
	}
	return t
}

// parsedDate is the last x-ms-date parsed: the SDKs sign with the current
// second, so consecutive requests mostly share it.
type parsedDate struct {
	text string
	when time.Time
	err  error
}

// parseDate parses an HTTP date, reusing the last one parsed.
func (s *Server) parseDate(text string) (time.Time, error) {
	if last := s.lastDate.Load(); last != nil && last.text == text {
		return last.when, last.err
	}
	when, err := http.ParseTime(text)
	s.lastDate.Store(&parsedDate{text: text, when: when, err: err})
	return when, err
}

// signer computes signatures: an HMAC-SHA256 keyed with the server's key,
// reset before each use, and room for the text it signs. Servers keep them
// in a pool.
type signer struct {
	mac     hash.Hash
	payload [256]byte
}

// signature computes the master-key signature of a request, into dst.
func (s *Server) signature(dst []byte, verb, resType, resLink, date string) []byte {
	sg, _ := s.signers.Get().(*signer)
	if sg == nil {
		sg = &signer{mac: hmac.New(sha256.New, s.key)}
	}
	sg.mac.Reset()
	sg.mac.Write(appendStringToSign(sg.payload[:0], verb, resType, resLink, date))
	dst = sg.mac.Sum(dst)
	s.signers.Put(sg)
	return dst
}

// authorize checks the request's master-key signature (Authorization:
// url-encoded "type=master&ver=1.0&sig=BASE64") over the verb, resource
// type, resource link and date, and that the date is within 15 minutes of
// now.
func (s *Server) authorize(r *http.Request, resType, resLink string) *apiError {
	raw := headerValue(r.Header, "Authorization")
	if raw == "" {
		return errorf(http.StatusUnauthorized, "Required Header authorization is missing. Ensure a valid Authorization token is passed.")
	}
	tok := parseToken(raw)
	switch typ := tok.typ; {
	case typ == "aad":
		return s.authorizeEmulatorToken(tok)
	case typ == "resource":
		return errorf(http.StatusUnauthorized, "authorization type %q is not accepted: docshard serve checks master-key signatures (type=master) and the emulator's Entra ID tokens (type=aad) only", typ)
	case typ != "master":
		return errorf(http.StatusUnauthorized, "The input authorization token can't serve the request: want type=master&ver=1.0&sig=SIGNATURE, got type %q", typ)
	case tok.ver != "1.0":
		return errorf(http.StatusUnauthorized, "The input authorization token can't serve the request: token version %q, want 1.0", tok.ver)
	}
	date := headerValue(r.Header, "X-Ms-Date")
	if date == "" {
		date = headerValue(r.Header, "Date")
	}
	if date == "" {
		return errorf(http.StatusUnauthorized, "The input authorization token can't serve the request: the request has neither x-ms-date nor Date.")
	}
	var sigBuf [64]byte
	var wantBuf [sha256.Size]byte
	n, err := 0, errSignatureLength
	if base64.StdEncoding.DecodedLen(len(tok.sig)) <= len(sigBuf) {
		n, err = base64.StdEncoding.Decode(sigBuf[:], []byte(tok.sig))
	}
	want := s.signature(wantBuf[:0], r.Method, resType, resLink, date)
	if err != nil || !hmac.Equal(sigBuf[:n], want) {
		return errorf(http.StatusUnauthorized, "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. Server used the following payload to sign: '%s'", strings.ReplaceAll(stringToSign(r.Method, resType, resLink, date), "\n", `\n`))
	}
	when, err := s.parseDate(date)
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

// EmulatorTokenKeyID is the key id ("kid") of the Entra ID tokens the
// official Cosmos DB emulator accepts, as the SDKs' emulator tests make
// them (azcosmos's emulatorTokenCredential): a JWT whose header names this
// kid and whose third part, where a real token has its signature, is the
// account key itself (its base64 text, base64url-encoded).
const EmulatorTokenKeyID = "CosmosEmulatorPrimaryMaster"

// authorizeEmulatorToken checks an Entra ID token (type=aad) as the
// official emulator does: a JWT with kid EmulatorTokenKeyID that carries
// the server's account key, within its nbf..exp (give or take the clock
// skew allowed to signatures). No issuer signs it: whoever knows the key
// can mint one, and a token carries the key in the clear, where a
// master-key signature shows only its HMAC. So the server accepts them
// only when it runs with the well-known emulator key, which is public
// anyway, or when Options.AcceptEmulatorTokens says so (docshard serve
// --accept-emulator-tokens); real Entra ID tokens, signed by Microsoft's
// issuer, are never accepted.
func (s *Server) authorizeEmulatorToken(tok token) *apiError {
	if !s.emulatorTokens {
		return errorf(http.StatusUnauthorized, "Entra ID tokens (type=aad) are not accepted: docshard serve accepts the emulator's tokens (kid %s) only with the well-known emulator key or --accept-emulator-tokens, and checks master-key signatures (type=master) otherwise", EmulatorTokenKeyID)
	}
	bad := func(why string) *apiError {
		return errorf(http.StatusUnauthorized, "The input authorization token can't serve the request: %s (docshard serve accepts the emulator's Entra ID tokens: a JWT with kid %s carrying the account key)", why, EmulatorTokenKeyID)
	}
	parts := strings.Split(tok.sig, ".")
	if len(parts) != 3 {
		return bad("the token is not a JWT (three dot-separated parts)")
	}
	var header struct {
		Kid string `json:"kid"`
	}
	if err := decodeJWTPart(parts[0], &header); err != nil {
		return bad("the JWT's header: " + err.Error())
	}
	if header.Kid != EmulatorTokenKeyID {
		return bad(fmt.Sprintf("the JWT's kid is %q", header.Kid))
	}
	var claims struct {
		NotBefore *float64 `json:"nbf"`
		Expires   *float64 `json:"exp"`
	}
	if err := decodeJWTPart(parts[1], &claims); err != nil {
		return bad("the JWT's claims: " + err.Error())
	}
	key, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[2], "="))
	if err != nil || subtle.ConstantTimeCompare(key, []byte(s.keyText)) != 1 {
		return bad("the JWT does not carry the server's account key")
	}
	now := s.now()
	if claims.Expires == nil || now.Add(-maxClockSkew).After(time.Unix(int64(*claims.Expires), 0)) {
		return errorf(http.StatusUnauthorized, "The authorization token is not valid at the current time: it expired (exp) or has no expiry; get a new one")
	}
	if claims.NotBefore != nil && now.Add(maxClockSkew).Before(time.Unix(int64(*claims.NotBefore), 0)) {
		return errorf(http.StatusUnauthorized, "The authorization token is not valid at the current time: its nbf is in the future")
	}
	return nil
}

// decodeJWTPart decodes a base64url JSON part of a JWT into v.
func decodeJWTPart(part string, v any) error {
	data, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
	if err != nil {
		return fmt.Errorf("not base64url: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	return nil
}
