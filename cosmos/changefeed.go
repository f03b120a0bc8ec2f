package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/store"
)

var _ store.ChangeFeeder = (*Store)(nil)

// changeToken is the store's change-feed continuation: azcosmos's
// composite token (the container's resource id and, per feed range, the
// service's etag) in an envelope bound by Hash to the collection link and
// the partition-key scope.
type changeToken struct {
	V    int    `json:"v"`
	Hash string `json:"h"`
	CF   string `json:"c"`
}

// compositeToken is the JSON form of azcosmos's change-feed continuation
// (the SDK's own format, which it reads back): the container's resource id
// and a queue of feed ranges, each with the etag to resume it from.
type compositeToken struct {
	Version      int          `json:"version"`
	ResourceID   string       `json:"resourceId"`
	Continuation []rangeToken `json:"continuation"`
}

type rangeToken struct {
	MinInclusive      string       `json:"minInclusive"`
	MaxExclusive      string       `json:"maxExclusive"`
	ContinuationToken *azcore.ETag `json:"continuationToken,omitempty"`
}

// wholeRange is the feed range of every partition-key value.
var wholeRange = azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "FF"}

// fromNowToken is a composite token that reads every range from "now":
// azcosmos sends its etag, "*", as If-None-Match, which Cosmos DB answers
// with 304 and the etag of the range's present. The SDK splits the whole
// range into the container's physical ranges itself, each starting at "*".
func fromNowToken() string {
	now := azcore.ETag("*")
	b, _ := json.Marshal(compositeToken{Version: 1, Continuation: []rangeToken{{MaxExclusive: wholeRange.MaxExclusive, ContinuationToken: &now}}})
	return string(b)
}

// readsFromNow reports whether a composite token still has a range to be
// read from "now", whose position the service has not given yet.
func readsFromNow(composite string) bool {
	var t compositeToken
	if err := json.Unmarshal([]byte(composite), &t); err != nil {
		return false
	}
	for _, r := range t.Continuation {
		if r.ContinuationToken != nil && *r.ContinuationToken == "*" {
			return true
		}
	}
	return false
}

// maxFromNowCalls bounds the calls FromNow makes to learn the present of
// every range: one per physical range, since a "*" range answers 304.
const maxFromNowCalls = 64

// ReadChanges reads a container's change feed with azcosmos's
// ReadChangeFeed; see store.ChangeFeeder. Cosmos DB orders changes by their
// last write within a physical partition (a feed range); a page holds the
// changes of one range, and the store's token, which wraps azcosmos's
// composite token, goes through the ranges in turn, so an empty page means
// that every range is caught up. With one physical partition (docshard
// serve, and any container the service has not split) the order is that
// of the last writes across the container. FromNow asks the service for
// the present of every range (If-None-Match "*", answered 304 with the
// range's etag) before it returns, so the token marks the moment of the
// call, not of a later one. PartitionKey is sent with each request
// (x-ms-documentdb-partitionkey); against an account whose container has
// several physical partitions azcosmos v1.5.0 sends it with each range's
// id, which has not been tried on a real account. The token is bound to the
// collection link and the partition key (another one's is an error
// wrapping store.ErrBadRequest), and azcosmos binds its own to the
// container's resource id. Cost: one round trip per range that has nothing
// new, up to the one that has, plus azcosmos's cached look-ups of the
// container and its ranges.
func (s *Store) ReadChanges(ctx context.Context, l string, opts *store.ChangeFeedOptions) (*store.ChangePage, error) {
	const op = "read changes"
	cc, c, err := s.container(op, l)
	if err != nil {
		return nil, err
	}
	o := opt.Of(opts)
	size := o.PageSize
	if size <= 0 {
		size = s.opts.PageSize
	}
	cfo := &azcosmos.ChangeFeedOptions{MaxItemCount: int32(min(size, math.MaxInt32))}
	keyText := ""
	if o.PartitionKey != nil {
		if keyText, err = keyIdentity(op, l, o.PartitionKey); err != nil {
			return nil, err
		}
		pk, err := partitionKey(o.PartitionKey)
		if err != nil {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
		}
		cfo.PartitionKey = &pk
	}
	tok := changeToken{V: 1, Hash: feedHash("changes", c.String(), keyText)}
	switch {
	case o.Continuation != "":
		var got changeToken
		if err := cursor.Decode(o.Continuation, &got); err != nil || got.V != 1 || got.CF == "" {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "malformed continuation token"}
		}
		if got.Hash != tok.Hash {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "the continuation token belongs to the change feed of another collection or partition key"}
		}
		cfo.Continuation = &got.CF
	case o.FromNow:
		now := fromNowToken()
		cfo.Continuation = &now
	default:
		cfo.FeedRange = &wholeRange
	}
	page := &store.ChangePage{}
	for calls := 1; ; calls++ {
		resp, err := cc.ReadChangeFeed(ctx, cfo)
		if err != nil {
			return nil, s.changeFeedErr(ctx, op, l, cc, cfo, err)
		}
		page.RequestCharge += float64(resp.RequestCharge)
		for _, it := range resp.Items {
			page.Items = append(page.Items, it)
		}
		if resp.ContinuationToken == "" {
			return nil, &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l, Message: "the service's change feed gave no continuation"}
		}
		tok.CF = resp.ContinuationToken
		if !o.FromNow || !readsFromNow(tok.CF) {
			break
		}
		if calls == maxFromNowCalls {
			return nil, &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l,
				Message: fmt.Sprintf("the service gave no position for the present of every feed range in %d calls", calls)}
		}
		cfo.Continuation, cfo.FeedRange = &tok.CF, nil
	}
	page.Continuation = cursor.Encode(tok)
	return page, nil
}

// changeFeedErr maps a ReadChangeFeed error. azcosmos refuses a token of a
// container deleted and created again under the same name (another
// resource id) without a status: that is the caller's token, so a bad
// request.
func (s *Store) changeFeedErr(ctx context.Context, op, l string, cc *azcosmos.ContainerClient, cfo *azcosmos.ChangeFeedOptions, err error) error {
	var t compositeToken
	if cfo.Continuation != nil && json.Unmarshal([]byte(*cfo.Continuation), &t) == nil && t.ResourceID != "" {
		if props, rerr := cc.Read(ctx, nil); rerr == nil && props.ContainerProperties != nil && props.ContainerProperties.ResourceID != t.ResourceID {
			return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "the continuation token belongs to a container deleted since", Err: err}
		}
	}
	mapped := mapErr(op, l, "", err)
	var se *store.Error
	if errors.As(mapped, &se) && se.Status == http.StatusBadRequest {
		se.Message = "the service refused the change-feed request (its continuation token, page size or partition key): " + serviceMessage(err)
	}
	return mapped
}

// serviceMessage returns the "message" of a service error's body, without
// the activity id Cosmos DB appends; the error code when there is none.
func serviceMessage(err error) string {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return err.Error()
	}
	if re.RawResponse != nil {
		if body, perr := runtime.Payload(re.RawResponse); perr == nil {
			if msg, _, _ := strings.Cut(gjson.GetBytes(body, "message").String(), "\r\n"); msg != "" {
				return strings.TrimSpace(msg)
			}
		}
	}
	return re.ErrorCode
}
