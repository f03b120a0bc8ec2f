package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/store"
)

// systemProps are the properties the store owns; a caller's values are
// replaced.
var systemProps = map[string]bool{"_etag": true, "_ts": true, "_rid": true, "_self": true, "_attachments": true}

// prepared is a validated incoming document.
type prepared struct {
	id     string
	pk     string // key text; "" = undefined
	hasTTL bool
	ttl    int64
	raw    []byte
	sys    bool // the caller's JSON holds system properties
}

// prepare validates doc: JSON, an object, a valid string id, a primitive
// partition-key value, a whole-number ttl. It does not decode the document.
func (c *collection) prepare(op, linkText string, doc []byte) (*prepared, error) {
	fail := func(id, format string, args ...any) error {
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: linkText, ID: id, Message: fmt.Sprintf(format, args...)}
	}
	if len(doc) > store.MaxDocumentSize {
		return nil, &store.Error{Kind: store.ErrTooLarge, Op: op, Link: linkText, Message: fmt.Sprintf("the document is %d bytes, more than %d", len(doc), store.MaxDocumentSize)}
	}
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) == 0 || trimmed[0] != '{' || !gjson.ValidBytes(trimmed) {
		if len(trimmed) > 0 && trimmed[0] != '{' && gjson.ValidBytes(trimmed) {
			return nil, fail("", "a document is a JSON object, got %s", gjson.ParseBytes(trimmed).Type)
		}
		return nil, fail("", "malformed JSON document")
	}
	p := &prepared{raw: trimmed}
	var idRes, pkRes, ttlRes gjson.Result
	idSeen := false
	gjson.ParseBytes(trimmed).ForEach(func(k, v gjson.Result) bool {
		name := k.String()
		switch {
		case name == "id":
			idRes, idSeen = v, true
		case name == "ttl":
			ttlRes = v
		case systemProps[name]:
			p.sys = true
		}
		if len(c.path) == 1 && name == c.path[0] {
			pkRes = v
		}
		return true
	})
	if !idSeen {
		return nil, fail("", `the document has no "id"`)
	}
	if idRes.Type != gjson.String {
		return nil, fail("", `"id" must be a string, got %s`, idRes.Raw)
	}
	p.id = idRes.String()
	if err := store.ValidateID(p.id); err != nil {
		se := err.(*store.Error)
		se.Op, se.Link = op, linkText
		return nil, se
	}
	if len(c.path) > 1 {
		pkRes = gjson.GetBytes(trimmed, gjsonPath(c.path))
	}
	if pkRes.Exists() {
		text, err := resultKeyText(pkRes)
		if err != nil {
			return nil, fail(p.id, "partition key %s: %v", c.spec.PartitionKeyPath, err)
		}
		p.pk = text
	}
	if ttlRes.Exists() && c.spec.DefaultTTL != nil {
		f := ttlRes.Float()
		if ttlRes.Type != gjson.Number || f != float64(int64(f)) || f == 0 || f < -1 {
			return nil, fail(p.id, `"ttl" must be -1 or a positive whole number of seconds, got %s`, ttlRes.Raw)
		}
		p.hasTTL, p.ttl = true, int64(f)
	}
	return p, nil
}

// gjsonPath escapes property names for gjson's dotted path syntax.
func gjsonPath(segs []string) string {
	var b strings.Builder
	for i, s := range segs {
		if i > 0 {
			b.WriteByte('.')
		}
		for _, r := range s {
			if strings.ContainsRune(`.*?|#@\!=<>%`, r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

func resultKeyText(r gjson.Result) (string, error) {
	switch r.Type {
	case gjson.String:
		return store.KeyText(r.String())
	case gjson.Number:
		return store.KeyText(r.Float())
	case gjson.True:
		return "true", nil
	case gjson.False:
		return "false", nil
	case gjson.Null:
		return "null", nil
	}
	return "", fmt.Errorf("must be a string, number, boolean or null, got %s", r.Raw)
}

// body returns the stored text: the caller's JSON with _etag and _ts set.
// Without system properties in the input it appends them to the bytes;
// otherwise it decodes and re-encodes the document.
func (p *prepared) body(etag string, ts int64) ([]byte, error) {
	etagJSON, _ := json.Marshal(etag)
	if !p.sys {
		end := bytes.LastIndexByte(p.raw, '}')
		inner := bytes.TrimSpace(p.raw[1:end])
		out := make([]byte, 0, end+len(etagJSON)+32)
		out = append(out, p.raw[:end]...)
		if len(inner) > 0 {
			out = append(out, ',')
		}
		out = append(out, `"_etag":`...)
		out = append(out, etagJSON...)
		out = append(out, `,"_ts":`...)
		out = strconv.AppendInt(out, ts, 10)
		return append(out, '}'), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p.raw, &m); err != nil {
		return nil, err
	}
	for k := range systemProps {
		delete(m, k)
	}
	m["_etag"] = etagJSON
	m["_ts"] = json.RawMessage(strconv.FormatInt(ts, 10))
	return json.Marshal(m)
}

// checkKey compares a caller's partition-key value with the document's.
func checkKey(op, linkText string, p *prepared, given any) error {
	if given == nil {
		return nil
	}
	text, err := store.KeyText(given)
	if err != nil {
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: linkText, ID: p.id, Err: err}
	}
	if text != p.pk {
		body := p.pk
		if body == "" {
			body = "undefined"
		}
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: linkText, ID: p.id,
			Message: fmt.Sprintf("the partition key given (%s) differs from the document's (%s)", text, body)}
	}
	return nil
}

// write validates and stores a document. mode is "create", "replace" or
// "upsert"; id is the replace target.
func (s *Store) write(ctx context.Context, mode, linkText, id string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	c, err := s.collection(mode, linkText)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var o store.WriteOptions
	if opts != nil {
		o = *opts
	}
	p, err := c.prepare(mode, linkText, doc)
	if err != nil {
		return nil, err
	}
	if mode == "replace" && p.id != id {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: mode, Link: linkText, ID: id, Message: fmt.Sprintf("the document's id is %q", p.id)}
	}
	if err := checkKey(mode, linkText, p, o.PartitionKey); err != nil {
		return nil, err
	}
	key := docKey(p.pk, p.id)
	unlock := s.lockDoc(c.link, key)
	defer unlock()

	now := s.clock()
	c.mu.RLock()
	old := c.docs[key]
	dropped := c.dropped
	c.mu.RUnlock()
	if dropped {
		return nil, &store.Error{Kind: store.ErrCollectionNotFound, Op: mode, Link: linkText}
	}
	live := old
	if old != nil && c.expired(old, now) {
		live = nil
	}
	switch {
	case mode == "create" && live != nil:
		return nil, &store.Error{Kind: store.ErrConflict, Op: mode, Link: linkText, ID: p.id, Message: "a document with this id exists"}
	case mode == "replace" && live == nil:
		return nil, &store.Error{Kind: store.ErrNotFound, Op: mode, Link: linkText, ID: p.id}
	case o.IfMatch != "" && (live == nil || live.etag != o.IfMatch):
		if live == nil {
			return nil, &store.Error{Kind: store.ErrPreconditionFailed, Op: mode, Link: linkText, ID: p.id, Message: "If-Match given for a document that does not exist"}
		}
		return nil, &store.Error{Kind: store.ErrPreconditionFailed, Op: mode, Link: linkText, ID: p.id, Message: fmt.Sprintf("If-Match %s, stored ETag %s", o.IfMatch, live.etag)}
	}
	e := &entry{key: key, id: p.id, pk: p.pk, etag: s.newETag(), ts: now.Unix(), hasTTL: p.hasTTL, ttl: p.ttl}
	if live != nil {
		e.seq = live.seq // a replace keeps the document's place in the feed
	} else {
		e.seq = c.nextSeq.Add(1) - 1
	}
	if e.body, err = p.body(e.etag, e.ts); err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: mode, Link: linkText, ID: p.id, Err: err}
	}
	if len(e.body) > store.MaxDocumentSize {
		return nil, &store.Error{Kind: store.ErrTooLarge, Op: mode, Link: linkText, ID: p.id, Message: fmt.Sprintf("the stored document would be %d bytes, more than %d", len(e.body), store.MaxDocumentSize)}
	}
	if s.db != nil {
		if err := s.persistPut(c, e); err != nil {
			return nil, s.persistErr(mode, linkText, p.id, err)
		}
	}
	c.mu.Lock()
	if c.dropped {
		c.mu.Unlock()
		return nil, &store.Error{Kind: store.ErrCollectionNotFound, Op: mode, Link: linkText}
	}
	c.publish(e, c.docs[key])
	c.mu.Unlock()
	return e.document(), nil
}

// Create adds a document; see store.Documents.
func (s *Store) Create(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return s.write(ctx, "create", l, "", doc, opts)
}

// Replace overwrites a document; see store.Documents.
func (s *Store) Replace(ctx context.Context, l, id string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return s.write(ctx, "replace", l, id, doc, opts)
}

// Upsert creates or replaces a document; see store.Documents.
func (s *Store) Upsert(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return s.write(ctx, "upsert", l, "", doc, opts)
}

// findKey resolves (id, partition key) to a document key. Without a key it
// uses the id alone when that is unambiguous in the collection.
func (c *collection) findKey(op, linkText, id string, pk any) (string, error) {
	if err := store.ValidateID(id); err != nil {
		se := err.(*store.Error)
		se.Op, se.Link = op, linkText
		return "", se
	}
	if pk != nil {
		text, err := store.KeyText(pk)
		if err != nil {
			return "", &store.Error{Kind: store.ErrBadRequest, Op: op, Link: linkText, ID: id, Err: err}
		}
		return docKey(text, id), nil
	}
	c.mu.RLock()
	keys := c.byID[id]
	c.mu.RUnlock()
	switch len(keys) {
	case 0:
		return "", &store.Error{Kind: store.ErrNotFound, Op: op, Link: linkText, ID: id}
	case 1:
		return keys[0], nil
	}
	return "", &store.Error{Kind: store.ErrBadRequest, Op: op, Link: linkText, ID: id,
		Message: fmt.Sprintf("%d documents have this id under different partition-key values; give the partition key", len(keys))}
}

// Read returns a document; see store.Documents.
func (s *Store) Read(ctx context.Context, l, id string, opts *store.ReadOptions) (*store.Document, error) {
	const op = "read"
	c, err := s.collection(op, l)
	if err != nil {
		return nil, err
	}
	var pk any
	if opts != nil {
		pk = opts.PartitionKey
	}
	key, err := c.findKey(op, l, id, pk)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	c.mu.RLock()
	e := c.live(key, now)
	c.mu.RUnlock()
	if e == nil {
		return nil, &store.Error{Kind: store.ErrNotFound, Op: op, Link: l, ID: id}
	}
	return e.document(), nil
}

// Delete removes a document; see store.Documents.
func (s *Store) Delete(ctx context.Context, l, id string, opts *store.WriteOptions) error {
	const op = "delete"
	c, err := s.collection(op, l)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var o store.WriteOptions
	if opts != nil {
		o = *opts
	}
	key, err := c.findKey(op, l, id, o.PartitionKey)
	if err != nil {
		return err
	}
	unlock := s.lockDoc(c.link, key)
	defer unlock()
	now := s.clock()
	c.mu.RLock()
	e := c.live(key, now)
	c.mu.RUnlock()
	if e == nil {
		return &store.Error{Kind: store.ErrNotFound, Op: op, Link: l, ID: id}
	}
	if o.IfMatch != "" && o.IfMatch != e.etag {
		return &store.Error{Kind: store.ErrPreconditionFailed, Op: op, Link: l, ID: id, Message: fmt.Sprintf("If-Match %s, stored ETag %s", o.IfMatch, e.etag)}
	}
	if s.db != nil {
		if err := s.persistDelete(c, key); err != nil {
			return s.persistErr(op, l, id, err)
		}
	}
	c.mu.Lock()
	c.remove(e)
	c.mu.Unlock()
	return nil
}
