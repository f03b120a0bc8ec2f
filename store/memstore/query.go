package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// queryToken is a query continuation: the cursor holding the results, the
// offset of the next page, and a hash binding it to its query.
type queryToken struct {
	V      int    `json:"v"`
	Hash   string `json:"h"`
	Cursor uint64 `json:"c"`
	Offset int    `json:"o"`
}

// feedToken is a read-feed continuation: the last sequence number returned.
type feedToken struct {
	V    int    `json:"v"`
	Link string `json:"l"`
	Seq  uint64 `json:"s"`
}

func encodeToken(v any) string { return cursor.Encode(v) }

func decodeToken(op, linkText, s string, v any) error {
	if err := cursor.Decode(s, v); err != nil {
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: linkText, Message: fmt.Sprintf("malformed continuation token %q", truncate(s, 40))}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// queryHash binds a token to the collection, query text, parameters and
// partition key it was issued for.
func queryHash(linkText string, q store.Query, pk string) string {
	h := fnv.New64a()
	params := append([]store.Param(nil), q.Parameters...)
	sort.Slice(params, func(i, j int) bool { return params[i].Name < params[j].Name })
	pj, _ := json.Marshal(params)
	for _, part := range []string{linkText, q.Text, string(pj), pk} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// Query runs Cosmos DB SQL over one collection; see store.Querier.
func (s *Store) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	const op = "query"
	c, err := s.collection(op, l)
	if err != nil {
		return nil, err
	}
	var o store.QueryOptions
	if opts != nil {
		o = *opts
	}
	pk := ""
	scoped := o.PartitionKey != nil
	if scoped {
		if pk, err = store.KeyText(o.PartitionKey); err != nil {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
		}
	}
	hash := queryHash(c.link, q, pk)
	tok := queryToken{V: 1, Hash: hash}
	if o.Continuation != "" {
		if err := decodeToken(op, l, o.Continuation, &tok); err != nil {
			return nil, err
		}
		if tok.V != 1 || tok.Hash != hash || tok.Offset < 0 {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "the continuation token belongs to another query, parameters or partition key"}
		}
	}
	results, ok := s.cursors.Get(tok.Cursor, hash)
	if !ok {
		if results, err = s.runQuery(ctx, c, l, q, scoped, pk); err != nil {
			return nil, err
		}
	}
	size := o.PageSize
	switch {
	case size == 0:
		size = s.opts.PageSize
	case size < 0:
		size = len(results) + 1
	}
	start := min(tok.Offset, len(results))
	end := min(start+size, len(results))
	page := &store.Page{Items: results[start:end:end]}
	if end < len(results) {
		if tok.Cursor == 0 || !ok {
			tok.Cursor = s.cursors.Put(hash, results)
		}
		tok.Offset = end
		page.Continuation = encodeToken(tok)
	}
	return page, nil
}

func (s *Store) runQuery(ctx context.Context, c *collection, l string, q store.Query, scoped bool, pk string) ([]json.RawMessage, error) {
	const op = "query"
	params := make(map[string]any, len(q.Parameters))
	for _, p := range q.Parameters {
		if len(p.Name) < 2 || p.Name[0] != '@' {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: fmt.Sprintf("parameter name %q must start with '@'", p.Name)}
		}
		params[p.Name] = p.Value
	}
	prog, err := query.Prepare(q.Text, params)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	now := s.clock()
	c.mu.RLock()
	snapshot := make([]*entry, 0, len(c.docs))
	for _, e := range c.order {
		if e.deleted || (scoped && e.pk != pk) || c.expired(e, now) {
			continue
		}
		snapshot = append(snapshot, e)
	}
	c.mu.RUnlock()
	var decodeErr error
	docs := func(yield func(query.Doc) bool) {
		for _, e := range snapshot {
			d, err := e.decoded()
			if err != nil {
				decodeErr = err
				return
			}
			if !yield(d) {
				return
			}
		}
	}
	out, err := prog.Execute(ctx, docs)
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	return out, nil
}

// ReadFeed walks a collection in creation order; see store.Feeder.
func (s *Store) ReadFeed(ctx context.Context, l string, opts *store.FeedOptions) (*store.Page, error) {
	const op = "read feed"
	c, err := s.collection(op, l)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var o store.FeedOptions
	if opts != nil {
		o = *opts
	}
	var tok feedToken
	if o.Continuation != "" {
		if err := decodeToken(op, l, o.Continuation, &tok); err != nil {
			return nil, err
		}
		if tok.V != 1 || tok.Link != c.link {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "the continuation token belongs to another collection"}
		}
	}
	size := o.PageSize
	if size <= 0 {
		size = s.opts.PageSize
	}
	now := s.clock()
	page := &store.Page{}
	c.mu.RLock()
	defer c.mu.RUnlock()
	i := sort.Search(len(c.order), func(i int) bool { return c.order[i].seq > tok.Seq })
	last := tok.Seq
	for ; i < len(c.order) && len(page.Items) < size; i++ {
		e := c.order[i]
		if e.deleted || c.expired(e, now) {
			continue
		}
		page.Items = append(page.Items, e.body)
		last = e.seq
	}
	for ; i < len(c.order); i++ {
		if e := c.order[i]; !e.deleted && !c.expired(e, now) {
			page.Continuation = encodeToken(feedToken{V: 1, Link: c.link, Seq: last})
			break
		}
	}
	return page, nil
}
