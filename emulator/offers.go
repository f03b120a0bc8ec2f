package emulator

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Offers: the throughput of a database or container, as Cosmos DB's
// /offers resource shapes it (offerVersion V2: a manual throughput in
// content.offerThroughput, or an autoscale one in
// content.offerAutopilotSettings.maxThroughput). docshard serve keeps and
// answers them (in the catalog, CatalogFile) but enforces nothing: no
// request is ever throttled. A database or container has an offer when it
// was created with throughput (x-ms-offer-throughput or
// x-ms-cosmos-offer-autopilot-settings); one created without has none, and
// reading its throughput is 404, as for a container of a shared-throughput
// database or a serverless account.

// offerRecord is the throughput of one resource, as the catalog keeps it.
type offerRecord struct {
	Link string `json:"link"` // "dbs/{db}" or "dbs/{db}/colls/{coll}"
	// Content is the offer's content: {"offerThroughput": N} or
	// {"offerAutopilotSettings": {"maxThroughput": N, ...}}.
	Content json.RawMessage `json:"content"`
	TS      int64           `json:"ts"`
}

// offerContent is what an offer's content says.
type offerContent struct {
	Throughput *int64 `json:"offerThroughput,omitempty"`
	Autopilot  *struct {
		MaxThroughput int64 `json:"maxThroughput"`
	} `json:"offerAutopilotSettings,omitempty"`
}

// The throughput Cosmos DB accepts: manual from 400 RU/s in steps of 100,
// autoscale from a maximum of 1000 RU/s in steps of 1000.
const (
	minManualThroughput    = 400
	minAutoscaleThroughput = 1000
)

// checkContent checks an offer's content and returns it as kept: exactly
// one of a manual and an autoscale throughput, each as Cosmos DB accepts it.
func checkContent(raw json.RawMessage) (json.RawMessage, *apiError) {
	var oc offerContent
	if err := json.Unmarshal(raw, &oc); err != nil {
		return nil, errorf(http.StatusBadRequest, "the offer's content is not valid: %v", err)
	}
	switch {
	case oc.Throughput != nil && oc.Autopilot != nil:
		return nil, errorf(http.StatusBadRequest, "the offer gives both offerThroughput and offerAutopilotSettings: give one (manual or autoscale)")
	case oc.Autopilot != nil:
		if m := oc.Autopilot.MaxThroughput; m < minAutoscaleThroughput || m%1000 != 0 {
			return nil, errorf(http.StatusBadRequest, "autoscale maxThroughput %d: want %d RU/s or more, in steps of 1000", m, minAutoscaleThroughput)
		}
	case oc.Throughput != nil:
		if t := *oc.Throughput; t < minManualThroughput || t%100 != 0 {
			return nil, errorf(http.StatusBadRequest, "offerThroughput %d: want %d RU/s or more, in steps of 100", t, minManualThroughput)
		}
	default:
		return nil, errorf(http.StatusBadRequest, "the offer gives no throughput: want content.offerThroughput or content.offerAutopilotSettings.maxThroughput")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, errorf(http.StatusBadRequest, "the offer's content is not valid: %v", err)
	}
	return buf.Bytes(), nil
}

// offerHeaders reads the throughput a database or container is created
// with: nil when it is created without.
func offerHeaders(h http.Header) (json.RawMessage, *apiError) {
	manual := strings.TrimSpace(h.Get("x-ms-offer-throughput"))
	auto := strings.TrimSpace(h.Get("x-ms-cosmos-offer-autopilot-settings"))
	switch {
	case manual != "" && auto != "":
		return nil, errorf(http.StatusBadRequest, "both x-ms-offer-throughput and x-ms-cosmos-offer-autopilot-settings are given: give one (manual or autoscale)")
	case manual != "":
		n, err := strconv.ParseInt(manual, 10, 64)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "x-ms-offer-throughput %q: want a whole number of RU/s", manual)
		}
		return checkContent(json.RawMessage(`{"offerThroughput":` + strconv.FormatInt(n, 10) + `}`))
	case auto != "":
		if !json.Valid([]byte(auto)) || auto[0] != '{' {
			return nil, errorf(http.StatusBadRequest, "x-ms-cosmos-offer-autopilot-settings %q: want {\"maxThroughput\": N}", auto)
		}
		return checkContent(json.RawMessage(`{"offerAutopilotSettings":` + auto + `}`))
	}
	return nil, nil
}

// offerID is the id (and _rid) of a resource's offer, derived from its
// link: lower-case, as the SDKs sign an offer's link.
func offerID(link string) string {
	d := digest("offer", link)
	return hex.EncodeToString(d[:4])
}

// offerTarget returns the _self and _rid of the resource an offer is for.
func offerTarget(link string) (self, rid string) {
	parts := strings.Split(link, "/")
	if len(parts) == 4 {
		ref := newCollRef(parts[1], parts[3])
		return ref.self, ridString(ref.rid)
	}
	rid = ridString(dbRID(parts[1]))
	return "dbs/" + rid + "/", rid
}

// offerJSON is an offer resource as Cosmos DB writes it.
func offerJSON(o offerRecord) []byte {
	id := offerID(o.Link)
	self, rid := offerTarget(o.Link)
	b, _ := json.Marshal(map[string]any{
		"id": id, "_rid": id, "_self": "offers/" + id + "/", "resource": self, "offerResourceId": rid,
		"offerType": "Invalid", "offerVersion": "V2", "content": o.Content,
		"_etag": offerETag(o), "_ts": o.TS,
	})
	return b
}

// offerETag is an offer's _etag: it changes with its content.
func offerETag(o offerRecord) string {
	return etagOf("offer", o.Link, string(o.Content), strconv.FormatInt(o.TS, 10))
}

// findOffer returns the offer whose id is id.
func (s *Server) findOffer(id string) (offerRecord, bool) {
	for _, o := range s.catalog.offerList() {
		if offerID(o.Link) == id {
			return o, true
		}
	}
	return offerRecord{}, false
}

// recordOffer keeps the offer of a resource created with throughput
// (content nil: none, and an offer left from an earlier resource of the
// link is dropped).
func (s *Server) recordOffer(link string, content json.RawMessage) *apiError {
	if content == nil {
		return s.dropOffer(link)
	}
	o := offerRecord{Link: link, Content: content, TS: s.now().Unix()}
	if err := s.catalog.change(func(_ map[string]int64, offers map[string]offerRecord) { offers[link] = o }); err != nil {
		s.logf("%v", err)
		return errorf(http.StatusServiceUnavailable, "recording the throughput: %v", err)
	}
	return nil
}

// dropOffer forgets the offer of a resource deleted, if it has one.
func (s *Server) dropOffer(link string) *apiError {
	if _, ok := s.catalog.offer(link); !ok {
		return nil
	}
	if err := s.catalog.change(func(_ map[string]int64, offers map[string]offerRecord) { delete(offers, link) }); err != nil {
		s.logf("%v", err)
		return errorf(http.StatusServiceUnavailable, "recording the throughput's deletion: %v", err)
	}
	return nil
}

// offers answers /offers: GET lists the offers, POST queries them (as
// azcosmos reads a resource's throughput: by offerResourceId).
func (s *Server) offers(c *call) *apiError {
	if c.r.Method != http.MethodGet && (c.r.Method != http.MethodPost || !c.isQuery()) {
		return c.badMethod()
	}
	var items [][]byte
	for _, o := range s.catalog.offerList() {
		items = append(items, offerJSON(o))
	}
	return c.resourceFeed("", "Offers", items)
}

// offer answers /offers/{id}: GET reads it, PUT replaces its throughput
// (manual or autoscale; If-Match honoured). The resource it is for cannot
// change.
func (s *Server) offer(c *call, id string) *apiError {
	if c.r.Method != http.MethodGet && c.r.Method != http.MethodPut {
		return c.badMethod()
	}
	o, ok := s.findOffer(id)
	if !ok {
		return errorf(http.StatusNotFound, "Resource Not Found: offer %q does not exist", id)
	}
	switch c.r.Method {
	case http.MethodGet:
		c.json(http.StatusOK, offerJSON(o), 1)
		return nil
	case http.MethodPut:
		var body struct {
			ID              string          `json:"id"`
			OfferResourceID string          `json:"offerResourceId"`
			Content         json.RawMessage `json:"content"`
		}
		if e := c.decode("offer", &body); e != nil {
			return e
		}
		_, rid := offerTarget(o.Link)
		switch {
		case body.ID != "" && body.ID != id:
			return errorf(http.StatusBadRequest, "the offer's id %q differs from %q in the path", body.ID, id)
		case body.OfferResourceID != "" && body.OfferResourceID != rid:
			return errorf(http.StatusBadRequest, "the offer's offerResourceId %q differs from its resource's %q: an offer's resource cannot change", body.OfferResourceID, rid)
		}
		if m := c.r.Header.Get("If-Match"); m != "" && m != "*" && m != offerETag(o) {
			return errorf(http.StatusPreconditionFailed, "%s the offer's ETag is %s, not %s", msgPrecondition, offerETag(o), m)
		}
		content, e := checkContent(body.Content)
		if e != nil {
			return e
		}
		s.admin.Lock()
		defer s.admin.Unlock()
		if _, ok := s.catalog.offer(o.Link); !ok {
			return errorf(http.StatusNotFound, "Resource Not Found: offer %q does not exist", id)
		}
		if e := s.recordOffer(o.Link, content); e != nil {
			return e
		}
		o, _ = s.catalog.offer(o.Link)
		c.json(http.StatusOK, offerJSON(o), 1)
		return nil
	}
	return c.badMethod()
}
