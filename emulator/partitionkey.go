package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/docshard/docshard/internal/jsontext"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// partitionKey reads x-ms-documentdb-partitionkey: a JSON array of one
// value (string, number, boolean or null); [{}] (and []) is the undefined
// key, store.None. given is false when the header is absent. Strings may
// use Go's escapes as well as JSON's (azcosmos quotes them with
// strconv.QuoteToASCII, which writes \U0001F600 and \x01). Several values
// are a hierarchical key (a MultiHash container's, whole or a prefix), a
// partitionkey.CompositeKey in which {} is None; the store holds it to the
// container's paths.
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
		// Strings with Go escapes JSON lacks.
		if parts, ok := goQuoted(h); ok {
			if len(parts) == 1 {
				return parts[0], true, nil
			}
			return parts, true, nil
		}
		return bad("want a JSON array of one value, or 2 to 3 for a hierarchical key")
	}
	switch len(parts) {
	case 0:
		return store.None, true, nil
	case 1:
		v, why := headerPart(parts[0])
		if why != "" {
			return bad(why)
		}
		return v, true, nil
	}
	ck := make(partitionkey.CompositeKey, len(parts))
	for i, p := range parts {
		v, why := headerPart(p)
		if why != "" {
			return bad(fmt.Sprintf("value %d: %s", i+1, why))
		}
		ck[i] = v
	}
	return ck, true, nil
}

// headerPart reads one value of a partition-key header; why says what is
// wrong with it.
func headerPart(raw json.RawMessage) (v any, why string) {
	v0 := bytes.TrimSpace(raw)
	switch v0[0] {
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v0, &m); err != nil || len(m) != 0 {
			return nil, "an object is not a partition-key value ({} is the undefined key)"
		}
		return store.None, ""
	case '[':
		return nil, "an array is not a partition-key value"
	case 'n':
		return store.Null, ""
	case 't', 'f':
		return v0[0] == 't', ""
	case '"':
		var s string
		_ = json.Unmarshal(v0, &s)
		return s, ""
	}
	return json.Number(v0), ""
}

// goQuoted reads a header that is an array of strings some of which use
// Go's escapes (strconv.Quote's \x01, \U0001F600) that JSON lacks: ok is
// false for anything else. A composite key's parts come back as a
// partitionkey.CompositeKey of strings.
func goQuoted(h string) (partitionkey.CompositeKey, bool) {
	inner, ok := strings.CutPrefix(h, "[")
	inner, ok2 := strings.CutSuffix(inner, "]")
	if !ok || !ok2 {
		return nil, false
	}
	var out partitionkey.CompositeKey
	rest := strings.TrimSpace(inner)
	for len(out) < partitionkey.MaxPaths {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return nil, false
		}
		s, err := strconv.Unquote(q)
		if err != nil {
			return nil, false
		}
		out = append(out, s)
		rest = strings.TrimSpace(rest[len(q):])
		if rest == "" {
			return out, true
		}
		if rest, ok = strings.CutPrefix(rest, ","); !ok {
			return nil, false
		}
		rest = strings.TrimSpace(rest)
	}
	return nil, false
}

// checkKeyArity refuses, as Cosmos DB does (400, sub-status 1001), a point
// operation's or batch's key whose number of values is not the
// container's: a hierarchical key takes all its values, a plain one one.
func checkKeyArity(key any, paths partitionkey.Paths) *apiError {
	n := 1
	if parts, ok := partitionkey.Parts(key); ok {
		n = len(parts)
	}
	if n == len(paths) || key == store.None {
		return nil
	}
	e := errorf(http.StatusBadRequest, "Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document. "+
		"(x-ms-documentdb-partitionkey has %d values; the container's partition key has %d paths, %s: give a value for each)", n, len(paths), paths)
	e.substatus = 1001
	return e
}

// keyDefinitionJSON is a container's partitionKey as Cosmos DB writes it:
// kind Hash with one path, or MultiHash with a hierarchical key's paths;
// version 2.
func keyDefinitionJSON(spec *store.CollectionSpec) map[string]any {
	kind := "Hash"
	if spec.Hierarchical() {
		kind = "MultiHash"
	}
	return map[string]any{"paths": spec.KeyPaths(), "kind": kind, "version": 2}
}
