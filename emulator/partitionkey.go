package emulator

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/docshard/docshard/internal/jsontext"
	"github.com/docshard/docshard/store"
)

// partitionKey reads x-ms-documentdb-partitionkey: a JSON array of one
// value (string, number, boolean or null); [{}] (and []) is the undefined
// key, store.None. given is false when the header is absent. Strings may
// use Go's escapes as well as JSON's (azcosmos quotes them with
// strconv.QuoteToASCII, which writes \U0001F600 and \x01). More than one
// value is a hierarchical key, which the store does not have.
func (c *call) partitionKey() (key any, given bool, e *apiError) {
	h := strings.TrimSpace(headerValue(c.r.Header, "X-Ms-Documentdb-Partitionkey"))
	if h == "" {
		return nil, false, nil
	}
	// The common case, one plain string: no decoding.
	if len(h) > 4 && strings.HasPrefix(h, `["`) && strings.HasSuffix(h, `"]`) && !strings.ContainsAny(h[2:len(h)-2], `"\\`) {
		return h[2 : len(h)-2], true, nil
	}
	bad := func(why string) (any, bool, *apiError) {
		return nil, false, errorf(http.StatusBadRequest, "x-ms-documentdb-partitionkey %q: %s", h, why)
	}
	if jsontext.HasLoneSurrogate([]byte(h)) {
		// encoding/json would read it as U+FFFD: another key.
		return bad(`holds a lone surrogate (a \ud800-\udfff escape without its pair): docshard refuses such keys rather than merge them with U+FFFD`)
	}
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(h), &parts); err != nil {
		// One string with Go escapes JSON lacks.
		inner, ok := strings.CutPrefix(h, "[")
		inner, ok2 := strings.CutSuffix(inner, "]")
		if s, err := strconv.Unquote(strings.TrimSpace(inner)); ok && ok2 && err == nil {
			return s, true, nil
		}
		return bad("want a JSON array of one value")
	}
	switch len(parts) {
	case 0:
		return store.None, true, nil
	case 1:
	default:
		return bad("hierarchical partition keys (MultiHash) are not supported by docshard serve: give one value")
	}
	v := bytes.TrimSpace(parts[0])
	switch v[0] {
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil || len(m) != 0 {
			return bad("an object is not a partition-key value ({} is the undefined key)")
		}
		return store.None, true, nil
	case '[':
		return bad("an array is not a partition-key value")
	case 'n':
		return store.Null, true, nil
	case 't', 'f':
		return v[0] == 't', true, nil
	case '"':
		var s string
		_ = json.Unmarshal(v, &s)
		return s, true, nil
	}
	return json.Number(v), true, nil
}
