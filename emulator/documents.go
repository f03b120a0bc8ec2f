package emulator

import (
	"context"
	"errors"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// Nominal request charges: the emulator does not model request units, but
// clients read the header, so every answer carries one.
const (
	chargeRead  = 1
	chargeWrite = 5
)

// documents answers /dbs/{db}/colls/{coll}/docs: POST creates (or, with
// x-ms-documentdb-is-upsert, upserts) a document or runs a query; GET reads
// the feed.
func (s *Server) documents(c *call, ref collRef) *apiError {
	switch c.r.Method {
	case http.MethodGet:
		return s.readFeed(c, ref)
	case http.MethodPost:
	default:
		return c.badMethod()
	}
	switch {
	case isTrue(c.r.Header.Get("x-ms-cosmos-is-batch-request")):
		return s.batch(c, ref)
	case c.isQuery():
		return s.query(c, ref)
	}
	key, given, e := c.partitionKey()
	if e != nil {
		return e
	}
	body, e := c.body()
	if e != nil {
		return e
	}
	path, e := s.pathOf(c.r.Context(), ref)
	if e != nil {
		return e
	}
	epoch, e := c.epoch()
	if e != nil {
		return e
	}
	opts := &store.WriteOptions{Epoch: epoch, Reshard: isTrue(c.r.Header.Get(HeaderReshard))}
	if given {
		if e := checkKeyArity(key, path); e != nil {
			return e
		}
		opts.PartitionKey = key
	}
	if !isTrue(c.r.Header.Get("x-ms-documentdb-is-upsert")) {
		// Cosmos DB ignores If-Match on a create.
		d, err := s.st.Create(c.r.Context(), ref.link, body, opts)
		if err != nil {
			return fromStore(err)
		}
		c.writeDocument(http.StatusCreated, ref, path, d, true)
		return nil
	}
	opts.IfMatch = c.r.Header.Get("If-Match")
	d, created, err := s.upsert(c.r.Context(), ref.link, body, opts)
	if err != nil {
		return fromStore(err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.writeDocument(status, ref, path, d, true)
	return nil
}

// upsert creates the document or replaces the one with its id and key,
// and says which: a create, and when the id exists, a replace (If-Match
// applies to the replace only, as in Cosmos DB); a replace that finds the
// document deleted since tries the create again. Each step is atomic, so
// concurrent upserts of one document all succeed and it is never missing.
// The loop is that race, not a retry of a failed call (store/retry is the
// layer that retries those, in the client): it goes round only while a
// concurrent delete and create keep changing which step applies.
func (s *Server) upsert(ctx context.Context, l string, body []byte, opts *store.WriteOptions) (*store.Document, bool, error) {
	createOpts := &store.WriteOptions{PartitionKey: opts.PartitionKey, Epoch: opts.Epoch, Reshard: opts.Reshard}
	for {
		d, err := s.st.Create(ctx, l, body, createOpts)
		if err == nil {
			return d, true, nil
		}
		if !errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrUniqueKeyConflict) {
			return nil, false, err
		}
		d, err = s.st.Replace(ctx, l, gjson.GetBytes(body, "id").String(), body, opts)
		if !errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrCollectionNotFound) {
			return d, false, err
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
	}
}

// document answers /dbs/{db}/colls/{coll}/docs/{id}: GET reads (304 when
// If-None-Match holds its ETag), PUT replaces, DELETE deletes, PATCH
// patches. Each needs the partition key (x-ms-documentdb-partitionkey);
// under another key the document is not found.
func (s *Server) document(c *call, ref collRef, id string) *apiError {
	ctx := c.r.Context()
	switch c.r.Method {
	case http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch:
	default:
		return c.badMethod()
	}
	key, given, e := c.partitionKey()
	if e != nil {
		return e
	}
	if !given {
		return errorf(http.StatusBadRequest, "PartitionKey value must be supplied for this operation: set x-ms-documentdb-partitionkey")
	}
	path, e := s.pathOf(ctx, ref)
	if e != nil {
		return e
	}
	if e := checkKeyArity(key, path); e != nil {
		return e
	}
	ifMatch := c.r.Header.Get("If-Match")
	epoch, e := c.epoch()
	if e != nil {
		return e
	}
	switch c.r.Method {
	case http.MethodGet:
		d, err := s.st.Read(ctx, ref.link, id, &store.ReadOptions{PartitionKey: key})
		if err != nil {
			return fromStore(err)
		}
		if inm := c.r.Header.Get("If-None-Match"); inm != "" && (inm == d.ETag || inm == "*") {
			c.w.Header().Set("etag", d.ETag)
			c.session(false)
			c.empty(http.StatusNotModified, chargeRead)
			return nil
		}
		c.writeDocument(http.StatusOK, ref, path, d, false)
	case http.MethodPut:
		body, e := c.body()
		if e != nil {
			return e
		}
		d, err := s.st.Replace(ctx, ref.link, id, body, &store.WriteOptions{PartitionKey: key, IfMatch: ifMatch, Epoch: epoch, Reshard: isTrue(c.r.Header.Get(HeaderReshard))})
		if err != nil {
			return fromStore(err)
		}
		c.writeDocument(http.StatusOK, ref, path, d, true)
	case http.MethodDelete:
		if err := s.st.Delete(ctx, ref.link, id, &store.WriteOptions{PartitionKey: key, IfMatch: ifMatch, Epoch: epoch, Reshard: isTrue(c.r.Header.Get(HeaderReshard))}); err != nil {
			return fromStore(err)
		}
		c.session(true)
		c.empty(http.StatusNoContent, chargeWrite)
	case http.MethodPatch:
		d, e := s.patch(c, ref, id, key, ifMatch, epoch)
		if e != nil {
			return e
		}
		c.writeDocument(http.StatusOK, ref, path, d, true)
	}
	return nil
}

// writeDocument answers a document with its ETag, session token and the
// system properties the store does not keep; a write asked for
// "Prefer: return=minimal" gets no body.
func (c *call) writeDocument(status int, ref collRef, path partitionkey.Paths, d *store.Document, write bool) {
	c.set("etag", d.ETag)
	c.session(write)
	charge := float64(chargeRead)
	if write {
		charge = chargeWrite
		if c.r.Header.Get("Prefer") == "return=minimal" {
			c.empty(status, charge)
			return
		}
	}
	c.jsonDocument(status, ref, d.Body, keyTextOf(d.Body, path), d.ID, d.Seq, charge)
}
