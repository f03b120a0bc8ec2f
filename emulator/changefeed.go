package emulator

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/store"
)

// changeFeed answers GET on a collection's documents with "A-IM:
// Incremental feed": Cosmos DB's change feed in its latest-version mode,
// from the store's store.ChangeFeeder, as azcosmos's ReadChangeFeed (and
// the other SDKs) read it. The request says where to start in
// If-None-Match: absent, from the beginning; "*", from now; else the etag
// of an earlier answer, which is the store's continuation token in quotes.
// If-Modified-Since (RFC 1123; ignored with If-None-Match) starts at the
// documents last written at or after that second. x-ms-max-item-count,
// x-ms-documentdb-partitionkey and x-ms-documentdb-partitionkeyrangeid
// qualify it as they do a read feed; x-ms-start-epk and x-ms-end-epk (as
// the Node.js SDK reads under a prefix of a hierarchical key) keep the
// documents whose effective partition key is in that range
// (effectiveKey). The answer is 200 with
// {"_rid", "Documents": [...], "_count"} when documents changed, else 304
// Not Modified with no body; either way its etag header is the position to
// send back in If-None-Match. A token that is not the store's, or of
// another collection or partition key, is 400. Other A-IM values (the
// all-versions-and-deletes mode, "Full-Fidelity Feed") are 501.
func (s *Server) changeFeed(c *call, ref collRef) *apiError {
	mode := strings.TrimSpace(c.r.Header.Get("A-IM"))
	if !strings.EqualFold(mode, "Incremental feed") {
		return unsupported("the change feed mode A-IM " + strconv.Quote(mode) + " (only \"Incremental feed\", the latest-version mode, is offered)")
	}
	cf, ok := s.st.(store.ChangeFeeder)
	if !ok {
		return unsupported("the change feed of this store")
	}
	ps, e := c.pageScope(ref)
	if e != nil {
		return e
	}
	opts := &store.ChangeFeedOptions{PageSize: ps.size, HideReshard: isTrue(c.r.Header.Get(HeaderHideReshard))}
	if ps.size < 0 {
		opts.PageSize = math.MaxInt32 // as many as a page holds
	}
	if ps.keyed {
		opts.PartitionKey = ps.key
	}
	var inRange func(doc []byte) (bool, *apiError)
	if ps.epk.narrowed() {
		path, e := s.pathOf(c.r.Context(), ref)
		if e != nil {
			return e
		}
		inRange = func(doc []byte) (bool, *apiError) {
			epk, err := effectiveKey(path, doc)
			if err != nil {
				return false, errorf(http.StatusInternalServerError, "the effective partition key of a stored document: %v", err)
			}
			return ps.epk.contains(epk), nil
		}
	}
	since := int64(math.MinInt64)
	switch inm := strings.TrimSpace(c.r.Header.Get("If-None-Match")); {
	case inm == "*":
		opts.FromNow = true
	case inm != "":
		opts.Continuation = strings.Trim(strings.TrimPrefix(inm, "W/"), `"`)
	default:
		if ims := c.r.Header.Get("If-Modified-Since"); ims != "" {
			t, ok := parseDate(ims)
			if !ok {
				return errorf(http.StatusBadRequest, "If-Modified-Since %q: want an RFC 1123 date", ims)
			}
			since = t.Unix()
		}
	}
	// From a time, or under part of the range, pages whose documents are
	// all older or elsewhere are skipped here, so an empty answer still
	// means the reader has caught up.
	var docs []json.RawMessage
	var page *store.ChangePage
	for {
		var err error
		if page, err = cf.ReadChanges(c.r.Context(), ref.link, opts); err != nil {
			return fromStore(err)
		}
		for _, it := range page.Items {
			if since != math.MinInt64 && gjson.GetBytes(it, "_ts").Int() < since {
				continue
			}
			if inRange != nil {
				in, e := inRange(it)
				if e != nil {
					return e
				}
				if !in {
					continue
				}
			}
			docs = append(docs, it)
		}
		if len(docs) > 0 || len(page.Items) == 0 {
			break
		}
		opts.Continuation, opts.FromNow = page.Continuation, false
	}
	h := c.w.Header()
	h.Set("etag", `"`+page.Continuation+`"`)
	if len(docs) == 0 {
		c.session(false)
		c.empty(http.StatusNotModified, chargeRead)
		return nil
	}
	items, e := s.withSystem(c, ref, docs)
	if e != nil {
		return e
	}
	h.Set("x-ms-item-count", strconv.Itoa(len(items)))
	c.session(false)
	c.json(http.StatusOK, feedJSON(ridString(ref.rid), "Documents", items), chargeRead+0.1*float64(len(items)))
	return nil
}

// parseDate reads an HTTP date: RFC 1123 in GMT as HTTP writes it, or with
// another zone name or a numeric offset (azcosmos writes "UTC").
func parseDate(v string) (time.Time, bool) {
	if t, err := http.ParseTime(v); err == nil {
		return t, true
	}
	for _, layout := range []string{time.RFC1123, time.RFC1123Z} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
