package emulator

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// HeaderWholeQuery is docshard's query extension (x-docshard-serve lists
// it as "query"): a query request carrying it with "true" is answered
// whole over the collection's one range, whatever it holds (ORDER BY,
// aggregates, DISTINCT, GROUP BY, TOP, OFFSET/LIMIT) and with or without a
// partition key, in pages that end exactly where the results do. Without
// it, a query sent across partitions is answered as Cosmos DB's gateway
// answers it (see gatewayScope). The cosmos backend sends it to docshard
// serve, so it need not merge what the server can answer whole.
const HeaderWholeQuery = "x-docshard-whole-query"

// The gateway's own wording for the cross-partition queries it refuses.
const (
	msgCrossPartitionDisabled = "Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception."
	msgGatewayCannotServe     = "The provided cross partition query can not be directly served by the gateway. This is a first chance (internal) exception that all newer clients will know how to handle gracefully. This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), then you can safely ignore this message."
	msgValueAggregatesOnly    = "Cross partition query only supports 'VALUE <AggregateFunc>' for aggregates."
	// substatusNotServable is the sub-status of a refusal that carries
	// the query's plan (CrossPartitionQueryNotServable).
	substatusNotServable = 1004
)

// gatewayScope decides how a query sent with neither a partition key nor
// a range id is answered, as Cosmos DB's gateway decides: a WHERE that
// pins the partition key (c.pk = 'a') makes it a single-partition query,
// answered whole (but DISTINCT, which the gateway leaves to the client
// there too); otherwise it is cross-partition, refused without
// x-ms-documentdb-query-enablecrosspartition (400), refused when it holds
// an aggregate outside SELECT VALUE (400), and refused with its plan in
// the body when the client must merge it (400, sub-status 1004:
// ORDER BY, aggregates, DISTINCT, GROUP BY, TOP, OFFSET/LIMIT). stream
// reports a cross-partition query the gateway runs itself, which it pages
// as the service does (see endOfPages). A query that does not parse is
// left to the store, which refuses it with its own message.
func (s *Server) gatewayScope(c *call, ref collRef, q store.Query) (stream bool, e *apiError) {
	parsed, err := query.Parse(q.Text)
	if err != nil {
		return false, nil
	}
	path, e := s.pathOf(c.r.Context(), ref)
	if e != nil {
		return false, e
	}
	segs := make([][]string, len(path))
	for i, p := range path {
		segs[i] = p.Segments()
	}
	pinned := query.PinsKey(parsed, segs...)
	if !pinned && !isTrue(c.r.Header.Get("x-ms-documentdb-query-enablecrosspartition")) {
		return false, errorf(http.StatusBadRequest, msgCrossPartitionDisabled)
	}
	plan, e := c.gatewayPlan(parsed, q)
	if e != nil {
		return false, e
	}
	switch {
	case pinned && plan.QueryInfo.DistinctType == "None":
		return false, nil
	case pinned:
		return false, refusedWithPlan(plan)
	case plan.NonValueAggregate():
		return false, errorf(http.StatusBadRequest, msgValueAggregatesOnly)
	case plan.ClientMerges():
		return false, refusedWithPlan(plan)
	}
	return true, nil
}

// refusedWithPlan is the gateway's refusal of a query the client must run
// per range: 400, sub-status 1004, the plan as JSON text in the body's
// additionalErrorInfo (older SDKs, Python's v3 among them, read it there).
func refusedWithPlan(plan *query.GatewayPlan) *apiError {
	e := errorf(http.StatusBadRequest, msgGatewayCannotServe)
	e.substatus = substatusNotServable
	e.additional = string(planJSON(plan))
	return e
}

// planJSON writes a plan as the service does (no HTML escaping of < > &).
func planJSON(plan *query.GatewayPlan) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(plan) // a GatewayPlan holds only strings, numbers and lists
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// gatewayPlan builds a query's plan (query.PlanGateway) with its
// parameters and the features the client says it merges.
func (c *call) gatewayPlan(parsed *query.Query, q store.Query) (*query.GatewayPlan, *apiError) {
	params, err := localquery.Params(q.Parameters)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	features := c.r.Header.Get("x-ms-cosmos-supported-query-features")
	plan, err := query.PlanGateway(parsed, params, query.GatewayOptions{CompositeAggregates: strings.Contains(features, "CompositeAggregate")})
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	return plan, nil
}

// queryPlan answers a query-plan request (x-ms-cosmos-is-query-plan-request)
// as the service does: the query's plan (query.PlanGateway) over the one
// range, "" to "FF".
func (c *call) queryPlan(q store.Query) *apiError {
	parsed, err := query.Parse(q.Text)
	if err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	plan, e := c.gatewayPlan(parsed, q)
	if e != nil {
		return e
	}
	c.json(http.StatusOK, planJSON(plan), chargeRead)
	return nil
}

// endToken is the continuation token of the empty page that ends a
// cross-partition query whose last page was full: the service stops a
// page when it is full, without looking further, so it answers such a
// page with a continuation and the next page empty, without one
// (azcosmos's TestCrossPartitionQuery counts that page). E binds it to the
// query, its parameters and the collection.
type endToken struct {
	E string `json:"e"`
}

// endBinding is what an endToken of query q over ref is bound to.
func endBinding(ref collRef, q store.Query) (string, error) {
	b, err := localquery.Hash("serve-end\x00"+ridString(ref.rid), q, "")
	return b.String(), err
}

// endOfPages reports whether continuation is an endToken: then the page it
// asks for is the empty last one, or a 400 when the token was issued for
// another query.
func endOfPages(ref collRef, q store.Query, continuation string) (bool, *apiError) {
	var t endToken
	if continuation == "" || cursor.Decode(continuation, &t) != nil || t.E == "" {
		return false, nil
	}
	want, err := endBinding(ref, q)
	if err != nil || t.E != want {
		return true, fromStore(localquery.BadToken("query", ref.link, continuation, "issued for another query, parameters, partition key or collection"))
	}
	return true, nil
}

// fullPageEnd returns the endToken a full last page of q carries.
func fullPageEnd(ref collRef, q store.Query) (string, *apiError) {
	b, err := endBinding(ref, q)
	if err != nil {
		return "", fromStore(&store.Error{Kind: store.ErrBadRequest, Op: "query", Link: ref.link, Err: err})
	}
	return cursor.Encode(endToken{E: b}), nil
}
