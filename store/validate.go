package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/docshard/docshard/partitionkey"
)

// ValidateID checks a document id against the rules Cosmos DB enforces:
// non-empty, at most MaxIDLength bytes, valid UTF-8. The error wraps
// ErrBadRequest and names the id.
//
// Cosmos DB's documentation forbids '/', '\\', '?' and '#' in ids (the SDKs'
// Resource.Id references; the REST reference's Create Document says only
// that an id has at most 255 characters, where the service quotas now say
// 1,023 bytes), but the service creates
// documents with them (and with spaces at the end, escape sequences such as
// "%20", CR, LF or Tab): Microsoft's own emulator tests expect 201 Created
// for each (azcosmos v1.5.0, emulator_cosmos_item_test.go,
// TestItemIdEncodingRoutingGW: "Disallowed/Chars", "Disallowed\\Chars",
// "Disallowed#Chars", "Disallowed?Chars"), and users report such documents
// created and then unreadable by id (Azure/azure-cosmos-dotnet-v3 issues
// 2606 and 4129). So does the embedded store, which docshard serve answers
// over: a faithful emulator accepts what the service accepts, and refusing
// them here would fail that suite (TestIDsAsTheGatewayReadsThem). The
// service's gateway then cannot address some of them by id: an
// id holding '/', '\\' or '#', ending in a space or holding an escape
// sequence is refused by point reads, replaces and deletes over HTTP (401),
// one holding a control character too (400); queries find them all. The
// embedded store's own API takes ids, not URLs, and addresses every one.
// Portable programs keep to ids without them.
func ValidateID(id string) error {
	switch {
	case id == "":
		return &Error{Kind: ErrBadRequest, Message: `document "id" is empty`}
	case len(id) > MaxIDLength:
		return &Error{Kind: ErrBadRequest, ID: id[:32] + "...", Message: fmt.Sprintf("document id is %d bytes, more than %d", len(id), MaxIDLength)}
	case !utf8.ValidString(id):
		return &Error{Kind: ErrBadRequest, ID: strconv.QuoteToASCII(id), Message: "document id is not valid UTF-8 (a lone surrogate has no UTF-8 form)"}
	}
	return nil
}

// ValidTTL reports whether seconds is a time to live Cosmos DB takes, as
// a collection's default (CollectionSpec.DefaultTTL) or a document's
// "ttl": -1 (never expires) or a whole number from 1 to 2^31-1.
func ValidTTL(seconds float64) bool {
	return seconds == -1 || seconds >= 1 && seconds <= math.MaxInt32 && seconds == math.Trunc(seconds)
}

// CheckSpec validates a collection spec as Cosmos DB would and returns a
// normalised copy (an empty PartitionKeyPath becomes "/id", unless
// PartitionKeyPaths holds a hierarchical key's paths; one path there moves
// to PartitionKeyPath; DefaultTTL and Indexing are copied, so the caller's
// spec can change afterwards) and the parsed key paths (one, or 2 to 3 for
// a hierarchical key); a Quota is copied too, and one that bounds nothing
// becomes nil. A bad key path (partitionkey.ParsePath's grammar; the
// error names the path and the byte offset), more than 3 paths, a path
// repeated, PartitionKeyPath set beside a hierarchical key's paths, a
// DefaultTTL that is 0, below -1 or above 2^31-1, an indexing policy that
// is not a JSON object, a unique key that is empty or has a bad path, more
// than MaxUniqueKeys unique keys or more than MaxUniqueKeyPaths paths in
// one, a vector embedding or full-text policy that is not a JSON object,
// computed properties that are not a JSON array, or a negative quota bound
// wrap ErrBadRequest. UniqueKeys and the policies are copied too. A nil
// spec means defaults.
func CheckSpec(spec *CollectionSpec) (CollectionSpec, partitionkey.Paths, error) {
	var sp CollectionSpec
	if spec != nil {
		sp = *spec
	}
	path, err := checkKeyPaths(&sp)
	if err != nil {
		return sp, path, err
	}
	if sp.DefaultTTL != nil {
		ttl := *sp.DefaultTTL
		if !ValidTTL(float64(ttl)) {
			return sp, path, &Error{Kind: ErrBadRequest, Message: fmt.Sprintf("defaultTtl %d: want -1 or 1 to %d seconds (nil for off)", ttl, math.MaxInt32)}
		}
		sp.DefaultTTL = &ttl
	}
	if len(sp.Indexing) > 0 {
		t := bytes.TrimSpace(sp.Indexing)
		if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
			return sp, path, &Error{Kind: ErrBadRequest, Message: "the indexing policy is not a JSON object"}
		}
		sp.Indexing = append(json.RawMessage(nil), t...)
	}
	if err := checkPolicies(&sp); err != nil {
		return sp, path, err
	}
	if q := sp.Quota; q != nil {
		if q.MaxDocuments < 0 || q.MaxBytes < 0 {
			return sp, path, &Error{Kind: ErrBadRequest, Message: fmt.Sprintf("quota maxDocuments %d, maxBytes %d: want 0 (no bound) or more", q.MaxDocuments, q.MaxBytes)}
		}
		if *q == (Quota{}) {
			sp.Quota = nil // bounds nothing
		} else {
			cp := *q
			sp.Quota = &cp
		}
	}
	return sp, path, nil
}

// Cosmos DB's limits on unique keys, which CheckSpec applies.
const (
	// MaxUniqueKeys is the most unique keys a collection has.
	MaxUniqueKeys = 10
	// MaxUniqueKeyPaths is the most paths one unique key combines.
	MaxUniqueKeyPaths = 16
)

// checkPolicies checks and copies sp's unique keys and its policies kept
// as JSON (see CheckSpec).
func checkPolicies(sp *CollectionSpec) error {
	if len(sp.UniqueKeys) > MaxUniqueKeys {
		return &Error{Kind: ErrBadRequest, Message: fmt.Sprintf("%d unique keys: a collection has at most %d", len(sp.UniqueKeys), MaxUniqueKeys)}
	}
	var keys [][]string
	for i, k := range sp.UniqueKeys {
		if len(k) == 0 || len(k) > MaxUniqueKeyPaths {
			return &Error{Kind: ErrBadRequest, Message: fmt.Sprintf("unique key %d has %d paths: want 1 to %d", i, len(k), MaxUniqueKeyPaths)}
		}
		for _, p := range k {
			if _, err := parseKeyPath(p); err != nil {
				return &Error{Kind: ErrBadRequest, Message: fmt.Sprintf("unique key %d: %v", i, err)}
			}
		}
		keys = append(keys, append([]string(nil), k...))
	}
	sp.UniqueKeys = keys
	for _, f := range []struct {
		name string
		v    *json.RawMessage
		open byte
		what string
	}{
		{"vectorEmbeddingPolicy", &sp.VectorEmbeddingPolicy, '{', "object"},
		{"fullTextPolicy", &sp.FullTextPolicy, '{', "object"},
		{"computedProperties", &sp.ComputedProperties, '[', "array"},
	} {
		t := bytes.TrimSpace(*f.v)
		switch {
		case len(t) == 0 || bytes.Equal(t, []byte("null")):
			*f.v = nil
		case t[0] != f.open || !json.Valid(t):
			return &Error{Kind: ErrBadRequest, Message: fmt.Sprintf("the %s is not a JSON %s", f.name, f.what)}
		default:
			*f.v = append(json.RawMessage(nil), t...)
		}
	}
	return nil
}
