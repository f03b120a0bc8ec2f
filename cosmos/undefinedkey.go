package cosmos

import (
	"context"
	"net/http"

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
// header undefinedKeyPolicy rewrites.
type undefinedKeyMark struct{}

// sdkKey converts a store partition-key value to the SDK's and returns the
// context to send the operation with: for store.None, the placeholder under
// a context marked for undefinedKeyPolicy; for any other value, ctx itself.
func sdkKey(ctx context.Context, v any) (context.Context, azcosmos.PartitionKey, error) {
	if v == partitionkey.None {
		return context.WithValue(ctx, undefinedKeyMark{}, true), azcosmos.NewPartitionKeyString(placeholderKeyValue), nil
	}
	pk, err := partitionKey(v)
	return ctx, pk, err
}

// undefinedKeyPolicy rewrites the partition-key header of requests marked
// by sdkKey from the placeholder to [{}].
type undefinedKeyPolicy struct{}

func (undefinedKeyPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	if raw.Context().Value(undefinedKeyMark{}) != nil {
		if v := raw.Header.Values(headerPartitionKey); len(v) == 1 && v[0] == placeholderKeyText {
			raw.Header.Set(headerPartitionKey, undefinedKeyText)
		}
	}
	return req.Next()
}
