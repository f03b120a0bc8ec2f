package cosmos

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/docshard/docshard/partitionkey"
)

// The undefined partition key.
//
// Cosmos DB addresses a document that has no value at its container's
// partition-key path with the partition-key header [{}] (PartitionKey.None
// in the .NET and Java SDKs): it is distinct from null, and reads, replaces,
// deletes and key-scoped queries of such documents must send it. azcosmos
// v1.5.0 cannot build that header: its PartitionKey holds JSON scalars only,
// and NewPartitionKey(), with no value, sends no header at all (a query then
// runs across partitions; a point operation is refused).
//
// So an operation on store.None is sent with a placeholder key, the string
// placeholderKeyValue, under a context marked by sdkKey, and
// undefinedKeyPolicy, one of the client's per-call policies, rewrites the
// header of marked requests from the placeholder's text to [{}]. The
// pipeline runs the client's per-call policies after azcosmos's own, which
// writes the header, and before the retry and authorisation policies (the
// signature does not cover this header), so each request is rewritten once
// and its retries keep it. The rewrite is exact: only a marked request whose
// header is exactly placeholderKeyText changes. Unmarked requests pass
// untouched, so a document whose key happens to be the placeholder string
// is addressed as itself; so do the SDK's own requests made under the same
// context (the account, the container), which carry no partition-key
// header. Were the policy missing, the placeholder would address no
// document (a read is 404, a create 400) rather than another one, as the
// null key would.
const (
	headerPartitionKey  = "x-ms-documentdb-partitionkey"
	placeholderKeyValue = "docshard:undefined-partition-key"
	placeholderKeyText  = `["` + placeholderKeyValue + `"]` // what azcosmos writes for it
	undefinedKeyText    = "[{}]"                            // Cosmos DB's undefined partition key
)

// undefinedKeyMark is the context key of requests whose partition-key
// header undefinedKeyPolicy rewrites; its value is an undefinedParts.
type undefinedKeyMark struct{}

// undefinedParts lists the positions, in the header's array, of the
// values that are None: [0] for store.None itself, the None parts of a
// hierarchical key.
type undefinedParts []int

// sdkKey converts a store partition-key value to the SDK's and returns the
// context to send the operation with: for store.None, and for a composite
// key with None parts, the placeholder in their places under a context
// marked for undefinedKeyPolicy; for any other value, ctx itself.
func sdkKey(ctx context.Context, v any) (context.Context, azcosmos.PartitionKey, error) {
	if v == partitionkey.None {
		return context.WithValue(ctx, undefinedKeyMark{}, undefinedParts{0}), azcosmos.NewPartitionKeyString(placeholderKeyValue), nil
	}
	if parts, ok := partitionkey.Parts(v); ok && slices.Contains(parts, any(partitionkey.None)) {
		var at undefinedParts
		sent := slices.Clone(parts)
		for i, p := range parts {
			if p == partitionkey.None {
				at, sent[i] = append(at, i), placeholderKeyValue
			}
		}
		pk, err := partitionKey(sent)
		return context.WithValue(ctx, undefinedKeyMark{}, at), pk, err
	}
	pk, err := partitionKey(v)
	return ctx, pk, err
}

// undefinedKeyPolicy rewrites the partition-key header of requests marked
// by sdkKey: each marked value that is the placeholder's text becomes {},
// so [placeholder] is sent as [{}] and ["a",placeholder] as ["a",{}].
type undefinedKeyPolicy struct{}

func (undefinedKeyPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	at, _ := raw.Context().Value(undefinedKeyMark{}).(undefinedParts)
	if v := raw.Header.Values(headerPartitionKey); len(at) > 0 && len(v) == 1 {
		if v[0] == placeholderKeyText {
			raw.Header.Set(headerPartitionKey, undefinedKeyText)
		} else if h, ok := rewriteUndefined(v[0], at); ok {
			raw.Header.Set(headerPartitionKey, h)
		}
	}
	return req.Next()
}

// rewriteUndefined returns the header h, a JSON array, with the values at
// positions at written {} where they are the placeholder's text; ok is
// false when h is no such array.
func rewriteUndefined(h string, at undefinedParts) (string, bool) {
	var vals []json.RawMessage
	if json.Unmarshal([]byte(h), &vals) != nil {
		return "", false
	}
	quoted := placeholderKeyText[1 : len(placeholderKeyText)-1]
	for _, i := range at {
		if i >= len(vals) || string(vals[i]) != quoted {
			return "", false
		}
		vals[i] = json.RawMessage("{}")
	}
	out, err := json.Marshal(vals)
	return string(out), err == nil
}
