package cosmos

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/store"
)

// docshard serve's extensions to the REST API, as package emulator
// defines them (HeaderServe, HeaderEpoch, HeaderFence, HeaderRaiseFence,
// CodeFenced; HeaderWholeQuery). Cosmos DB has no equivalent.
const (
	headerServe      = "x-docshard-serve"
	headerWholeQuery = "x-docshard-whole-query"
	headerEpoch      = "x-docshard-epoch"
	headerReshard    = "x-docshard-reshard"
	headerHide       = "x-docshard-hide-reshard"
	headerFence      = "x-docshard-fence"
	headerRaiseFence = "x-docshard-raise-fence"
	codeFenced       = "Fenced"
)

// FencedStore is the store of endpoints that are all docshard serve over a
// store that keeps fences (Open returns it for them). It is a Store that
// is also a store.Fencer: writes stamped with an epoch
// (store.WriteOptions.Epoch, store.BatchOptions.Epoch) carry it to the
// server in the header x-docshard-epoch, and the server refuses them,
// atomically with the write, when the database's fence is above it
// (store.ErrFenced). RaiseFence and Fence read the database with the
// extension's headers.
//
// The epoch travels as a per-request header set with azcore's
// policy.WithHTTPHeader, which replaces any such headers the caller's ctx
// carries.
type FencedStore struct {
	*Store
}

var _ store.Fencer = (*FencedStore)(nil)

// Open is New, and then asks every account's endpoint whether it is
// docshard serve, and with which extensions (a database read answering
// x-docshard-serve; one more round trip per account). When all offer
// "query", every query is sent with x-docshard-whole-query and runs on the
// server whole (see Query). When all offer "fence", it returns a
// *FencedStore, a store.Fencer; otherwise the *Store New returns, which
// is not one and ignores
// store.WriteOptions.Epoch: Cosmos DB cannot refuse a stale write
// atomically, so the window between a new resolver and a router that has
// not seen it is not closed there by a fence; router leases in the shared
// state (package shardstate) bound it (docs/design.md#shared-state).
func Open(ctx context.Context, opts *Options) (store.Store, error) {
	s, err := New(ctx, opts)
	if err != nil {
		return nil, err
	}
	fenced, whole, moves := true, true, true
	for _, cl := range s.clients() {
		h, err := s.databaseHeaders(ctx, "open", cl, "docshard-ping", nil)
		if err != nil {
			return nil, err
		}
		offered := strings.Split(h.Get(headerServe), ",")
		fenced = fenced && slices.Contains(offered, "fence")
		whole = whole && slices.Contains(offered, "query")
		moves = moves && slices.Contains(offered, "reshard")
	}
	s.wholeQueries = whole
	s.marks = moves
	if !fenced {
		return s, nil
	}
	s.fenced = true
	return &FencedStore{Store: s}, nil
}

// clients returns the client of every account, each once.
func (s *Store) clients() []*azcosmos.Client {
	out := []*azcosmos.Client{s.def}
	for _, cl := range s.bound {
		if !slices.Contains(out, cl) {
			out = append(out, cl)
		}
	}
	return out
}

// databaseClients returns the client of every account that may hold a
// collection of database db, each once: the database's own account and
// those of its collections bound elsewhere.
func (s *Store) databaseClients(db string) []*azcosmos.Client {
	first := s.def
	if cl, ok := s.bound["dbs/"+db]; ok {
		first = cl
	}
	out := []*azcosmos.Client{first}
	for l, cl := range s.bound {
		if strings.HasPrefix(l, "dbs/"+db+"/colls/") && !slices.Contains(out, cl) {
			out = append(out, cl)
		}
	}
	return out
}

// stamp returns ctx carrying a write's epoch to docshard serve; on other
// endpoints, and for epoch 0, ctx itself.
func (s *Store) stamp(ctx context.Context, epoch int64) context.Context {
	return s.stampWrite(ctx, epoch, false)
}

// stampWrite is stamp with the write's reshard mark
// (store.WriteOptions.Reshard) too, which docshard serve alone is sent.
func (s *Store) stampWrite(ctx context.Context, epoch int64, reshard bool) context.Context {
	h := http.Header{}
	if s.fenced && epoch != 0 {
		h.Set(headerEpoch, strconv.FormatInt(epoch, 10))
	}
	if s.marks && reshard {
		h.Set(headerReshard, "true")
	}
	if len(h) == 0 {
		return ctx
	}
	return policy.WithHTTPHeader(ctx, h)
}

// fencedBy reports whether a 412 answer is docshard serve's refusal of a
// stale epoch (its fence header, or its body code), and the fence it
// names.
func fencedBy(resp *http.Response) (string, bool) {
	if resp == nil {
		return "", false
	}
	if f := resp.Header.Get(headerFence); f != "" {
		return f, true
	}
	body, err := runtime.Payload(resp)
	return "unknown", err == nil && gjson.GetBytes(body, "code").String() == codeFenced
}

// databaseHeaders reads a database with the extra request headers hdr and
// returns the answer's headers, whether the database exists or not.
func (s *Store) databaseHeaders(ctx context.Context, op string, cl *azcosmos.Client, db string, hdr http.Header) (http.Header, error) {
	dc, err := cl.NewDatabase(db)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: "dbs/" + db, Err: err}
	}
	if len(hdr) > 0 {
		ctx = policy.WithHTTPHeader(ctx, hdr)
	}
	resp, err := dc.Read(ctx, nil)
	var re *azcore.ResponseError
	switch {
	case err == nil:
		return resp.RawResponse.Header, nil
	case notFound(err) && errors.As(err, &re) && re.RawResponse != nil:
		return re.RawResponse.Header, nil
	}
	return nil, mapErr(op, "dbs/"+db, "", err)
}

// fence reads (or, with raise, raises) the fence of a database on every
// account that may hold its collections, and returns the lowest: the fence
// in force everywhere.
func (f *FencedStore) fence(ctx context.Context, op, databaseLink string, raise http.Header) (int64, error) {
	if err := f.checkOpen(op, databaseLink); err != nil {
		return 0, err
	}
	db, err := link.ParseDatabase(databaseLink)
	if err != nil {
		return 0, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: databaseLink, Err: err}
	}
	lowest := int64(-1)
	for _, cl := range f.databaseClients(db) {
		h, err := f.databaseHeaders(ctx, op, cl, db, raise)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(h.Get(headerFence), 10, 64)
		if err != nil {
			return 0, store.Errorf(store.ErrUnavailable, op, databaseLink, "", "the endpoint answered no fence (%s %q): is it still docshard serve?", headerFence, h.Get(headerFence))
		}
		if lowest < 0 || n < lowest {
			lowest = n
		}
	}
	return lowest, nil
}

// RaiseFence raises the database's fence to epoch on docshard serve (a
// database read with x-docshard-raise-fence; one round trip per account
// that may hold the database's collections); see store.Fencer. The server
// waits for the stamped writes in progress. It returns the fence then in
// force, the lowest of the accounts'. A negative epoch is an error
// wrapping store.ErrBadRequest.
func (f *FencedStore) RaiseFence(ctx context.Context, databaseLink string, epoch int64) (int64, error) {
	const op = "raise fence"
	if epoch < 0 {
		return 0, store.Errorf(store.ErrBadRequest, op, databaseLink, "", "epoch %d is negative", epoch)
	}
	return f.fence(ctx, op, databaseLink, http.Header{headerRaiseFence: {strconv.FormatInt(epoch, 10)}})
}

// Fence returns the database's fence on docshard serve (a database read;
// the lowest of the accounts' when its collections span several); see
// store.Fencer.
func (f *FencedStore) Fence(ctx context.Context, databaseLink string) (int64, error) {
	return f.fence(ctx, "read fence", databaseLink, nil)
}
