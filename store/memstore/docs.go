package memstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/docshard/docshard/internal/docpatch"
	"github.com/docshard/docshard/internal/jsontext"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// incoming is a validated document to write.
type incoming struct {
	id     string
	pk     string // key text; store.NoneText when the document has no key
	hasTTL bool
	ttl    int64
	raw    []byte // the document's text, outer white space trimmed
	sys    bool   // it holds system properties, which the store replaces
}

// prepare validates a document in one pass without decoding it: JSON text
// of one object (jsontext.Strict: what encoding/json decodes, in valid
// UTF-8), a string "id" valid for store.ValidateID, a partition-key value
// that is a string, number, boolean or null (or none), and a "ttl" of -1
// or 1 to 2^31-1, whether or not the collection has TTL on. "id", "ttl" and the
// property holding the key may appear only once.
func (c *collection) prepare(op, l string, doc []byte) (in incoming, err error) {
	bad := func(id, format string, args ...any) error {
		return store.Errorf(store.ErrBadRequest, op, l, id, format, args...)
	}
	if len(doc) > store.MaxDocumentSize {
		return in, store.Errorf(store.ErrTooLarge, op, l, "", "the document is %d bytes, more than %d", len(doc), store.MaxDocumentSize)
	}
	sc := jsontext.NewScanner(doc, jsontext.Strict)
	start := sc.SkipSpace()
	if start < len(doc) && doc[start] != '{' {
		if err := sc.Skip(0); err == nil && sc.SkipSpace() == len(doc) {
			return in, bad("", "a document is a JSON object, got %s", kindOf(doc[start]))
		}
		sc.Seek(start)
	}
	members, err := sc.Object()
	if err != nil {
		return in, bad("", "malformed JSON: %v", err)
	}
	var idv, keyv, ttlv []byte
	for {
		name, ok, err := members.Next()
		if err != nil {
			return in, bad("", "malformed JSON: %v", err)
		}
		if !ok {
			break
		}
		v := sc.Pos()
		if err := sc.Skip(1); err != nil {
			return in, bad("", "malformed JSON: %v", err)
		}
		val := doc[v:sc.Pos()]
		switch {
		case name.Is("id"):
			if idv != nil {
				return in, bad("", `"id" appears twice`)
			}
			idv = val
		case name.Is("ttl"):
			if ttlv != nil {
				return in, bad("", `"ttl" appears twice`)
			}
			ttlv = val
		case (len(name.Body) > 0 && name.Body[0] == '_') || name.Escaped:
			in.sys = in.sys || isSystem(name)
		}
		if name.Is(c.path.Segment(0)) {
			if keyv != nil {
				return in, bad("", "the partition-key property %q appears twice", c.path.Segment(0))
			}
			keyv = val
		}
	}
	end := sc.Pos()
	if sc.SkipSpace() != len(doc) {
		return in, bad("", "malformed JSON: %v", sc.Fail("unexpected "+strconv.QuoteRune(rune(doc[sc.Pos()]))+" after the document"))
	}
	in.raw = doc[start:end]

	if idv == nil {
		return in, bad("", `the document has no "id"`)
	}
	if idv[0] != '"' {
		return in, bad("", `"id" must be a string, got %.40s`, idv)
	}
	if q := quoted(idv); q.Escaped && jsontext.HasLoneSurrogate(q.Body) {
		return in, bad("", `"id" %.60s holds a lone surrogate (a \ud800-\udfff escape without its pair), which has no UTF-8 form: docshard refuses it rather than store it as U+FFFD`, idv)
	}
	in.id = quoted(idv).Decode()
	if err := store.ValidateID(in.id); err != nil {
		return in, withOp(err, op, l)
	}

	if c.paths.Hierarchical() {
		text, err := c.paths.AppendDocIdentity(nil, in.raw)
		if err != nil {
			return in, bad(in.id, "the partition key at %s: %v", c.paths, err)
		}
		in.pk = string(text)
		keyv = nil
	} else {
		in.pk = store.NoneText
	}
	for i := 1; i < c.path.Len() && keyv != nil; i++ {
		if keyv[0] != '{' {
			keyv = nil
			break
		}
		if keyv, err = findMember(keyv, c.path.Segment(i)); err != nil {
			return in, bad(in.id, "%v at %s", err, c.paths)
		}
	}
	if keyv != nil {
		if in.pk, err = keyText(keyv); err != nil {
			return in, bad(in.id, "the partition key at %s %v", c.paths, err)
		}
	}

	if ttlv != nil {
		// Refused whether or not TTL is on, as Cosmos DB refuses it (and
		// ReplaceCollection may turn TTL on before this write takes its
		// lock).
		if in.ttl, in.hasTTL = ttlValue(ttlv); !in.hasTTL {
			return in, bad(in.id, `"ttl" must be -1 or a whole number of seconds from 1 to %d, got %.40s: leave "ttl" out for the collection's default`, math.MaxInt32, ttlv)
		}
	}
	return in, nil
}

// ttlValue reads the JSON text of a document's "ttl": ok when it is -1 or
// a whole number of seconds from 1 to 2^31-1.
func ttlValue(text []byte) (ttl int64, ok bool) {
	if len(text) == 0 || text[0] == '"' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil || !store.ValidTTL(f) {
		return 0, false
	}
	return int64(f), true
}

// isSystem reports whether a top-level property belongs to the store:
// whatever the caller wrote there is replaced.
func isSystem(name jsontext.Quoted) bool {
	for _, sys := range [...]string{"_etag", "_ts", "_rid", "_self", "_attachments"} {
		if name.Is(sys) {
			return true
		}
	}
	return false
}

func kindOf(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// quoted views a scanned JSON string.
func quoted(text []byte) jsontext.Quoted {
	return jsontext.Quoted{Body: text[1 : len(text)-1], Escaped: bytes.IndexByte(text, '\\') >= 0}
}

// findMember returns the value of the property name in a scanned object,
// nil when it has none. A name that appears twice is an error.
func findMember(obj []byte, name string) ([]byte, error) {
	sc := jsontext.NewScanner(obj, jsontext.Lenient) // checked already
	members, err := sc.Object()
	if err != nil {
		return nil, err
	}
	var found []byte
	for {
		n, ok, err := members.Next()
		if err != nil || !ok {
			return found, err
		}
		v := sc.Pos()
		if err := sc.Skip(1); err != nil {
			return nil, err
		}
		if n.Is(name) {
			if found != nil {
				return nil, fmt.Errorf("the property %q appears twice", name)
			}
			found = obj[v:sc.Pos()]
		}
	}
}

// keyText is the identity text (partitionkey.IdentityText) of a scanned
// JSON value, which must be a string, number, boolean or null.
func keyText(v []byte) (string, error) {
	switch v[0] {
	case '{', '[':
		return "", fmt.Errorf("must be a string, number, boolean or null, got %s", kindOf(v[0]))
	case '"':
		if jsontext.HasLoneSurrogate(v[1 : len(v)-1]) {
			return "", fmt.Errorf(`%.60s holds a lone surrogate (a \ud800-\udfff escape without its pair), which has no UTF-8 form: docshard refuses it rather than store it as U+FFFD`, v)
		}
	}
	rv, err := partitionkey.RawValueOf(v)
	var buf [64]byte
	var text []byte
	if err == nil {
		text, err = rv.AppendIdentity(buf[:0])
	}
	if err != nil {
		return "", fmt.Errorf("is not a valid value: %w", err)
	}
	return string(text), nil
}

// withOp fills in the operation and link of an error from store helpers.
func withOp(err error, op, l string) error {
	if err == nil {
		return nil // before se escapes: the common case allocates nothing
	}
	var se *store.Error
	if errors.As(err, &se) {
		cp := *se
		cp.Op, cp.Link = op, l
		return &cp
	}
	return err
}

// body returns the stored text: the caller's JSON with its system
// properties left out and "_etag" and "_ts" appended. Without system
// properties in the input (the usual case) it is one copy.
func (in *incoming) body(etag string, ts int64) []byte {
	out := make([]byte, 0, len(in.raw)+len(etag)+40)
	if !in.sys {
		out = append(out, in.raw[:len(in.raw)-1]...)
	} else {
		out = append(out, '{')
		sc := jsontext.NewScanner(in.raw, jsontext.Lenient) // checked already
		members, _ := sc.Object()
		n := 0
		for {
			from := sc.Pos()
			name, ok, err := members.Next()
			if err != nil || !ok {
				break
			}
			from += bytes.IndexByte(in.raw[from:], '"') // the name's quote, after any ',' and space
			if err := sc.Skip(1); err != nil {
				break
			}
			if (len(name.Body) > 0 && name.Body[0] == '_' || name.Escaped) && isSystem(name) {
				continue
			}
			if n > 0 {
				out = append(out, ',')
			}
			out = append(out, in.raw[from:sc.Pos()]...)
			n++
		}
	}
	// "id" is always there, so a comma always precedes ours.
	out = append(out, `,"_etag":"\"`...)
	out = append(out, etag[1:len(etag)-1]...)
	out = append(out, `\"","_ts":`...)
	out = strconv.AppendInt(out, ts, 10)
	return append(out, '}')
}

// givenKey returns the key text of a caller's partition-key option; given
// is false when it is nil. Of a hierarchical key it takes the full key
// (a CompositeKey or []any of as many values as paths), and with prefix
// (queries and feeds) a prefix of it too, whose text then ends in a comma
// (partitionkey.CompositePrefix); see store.KeyParts.
func (c *collection) givenKey(op, l, id string, v any, prefix bool) (text string, given bool, err error) {
	if v == nil {
		return "", false, nil
	}
	if !c.paths.Hierarchical() {
		text, err = partitionkey.IdentityText(v)
		if err != nil {
			return "", false, withOp(withID(store.BadPartitionKey(err), id), op, l)
		}
		return text, true, nil
	}
	parts, err := store.KeyParts(v, len(c.paths), prefix)
	if err != nil {
		return "", false, withOp(withID(err, id), op, l)
	}
	b, err := partitionkey.AppendCompositeIdentity(nil, parts)
	if err != nil {
		return "", false, withOp(withID(store.BadPartitionKey(err), id), op, l)
	}
	text = string(b)
	if len(parts) < len(c.paths) {
		text = partitionkey.CompositePrefix(text)
	}
	return text, true, nil
}

func withID(err error, id string) error {
	var se *store.Error
	if errors.As(err, &se) && se.ID == "" {
		cp := *se
		cp.ID = id
		return &cp
	}
	return err
}

// write validates and stores a document. mode is "create", "replace" or
// "upsert"; id is the replace target.
func (s *Store) write(ctx context.Context, mode, l, id string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	c, err := s.collection(ctx, mode, l)
	if err != nil {
		return nil, err
	}
	o := opt.Of(opts)
	if mode == "replace" {
		if err := store.ValidateID(id); err != nil {
			return nil, withOp(err, mode, l)
		}
	}
	in, err := c.prepare(mode, l, doc)
	if err != nil {
		return nil, err
	}
	if mode == "replace" && in.id != id {
		return nil, store.Errorf(store.ErrBadRequest, mode, l, id, "the document's id is %q", in.id)
	}
	if text, given, err := c.givenKey(mode, l, in.id, o.PartitionKey, false); err != nil {
		return nil, err
	} else if given && text != in.pk {
		return nil, store.Errorf(store.ErrBadRequest, mode, l, in.id,
			"the partition key given (%s) differs from the document's (%s at %s)", text, in.pk, c.paths)
	}

	return s.put(ctx, c, mode, l, in.id, in.pk, o, &in, nil)
}

// put writes the document (id, pk) under the fence of o.Epoch and the
// document's write lock: in, checked against the current version by
// precondition, or, for a patch (in nil), the current version as spec
// leaves it, so the patch applies to the version it replaces atomically.
func (s *Store) put(ctx context.Context, c *collection, mode, l, id, pk string, o store.WriteOptions, in *incoming, spec *docpatch.Spec) (*store.Document, error) {
	var f *dbFence
	if o.Epoch != 0 {
		var err error
		if f, err = s.enterFence(c, mode, l, id, o.Epoch); err != nil {
			return nil, err
		}
	}
	m := s.lockFor(c, pk, id)
	m.Lock()
	defer unlock(m, f)
	now := s.clock().Unix()
	c.mu.RLock()
	old := c.find(id, pk)
	dropped := c.dropped
	c.mu.RUnlock()
	if dropped {
		return nil, &store.Error{Kind: store.ErrCollectionNotFound, Op: mode, Link: l}
	}
	live := old
	if old != nil && old.expireAt <= now {
		live = nil
	}
	check := mode
	if spec != nil {
		check = "replace"
	}
	if err := precondition(check, l, id, pk, live, o.IfMatch); err != nil {
		return nil, withOp(err, mode, l)
	}
	if spec != nil {
		p, err := c.patched(ctx, mode, l, id, spec, live.body)
		if err != nil {
			return nil, err
		}
		in = &p
	}
	e, err := s.version(c, mode, l, in, live, now)
	if err != nil {
		return nil, err
	}
	e.quiet = o.Reshard
	var claims []uniqueClaim
	if c.uniq != nil {
		claims = []uniqueClaim{{id: id, tuples: c.uniq.tuples(pk, e.body)}}
		if _, err := c.claimUnique(mode, l, now, claims, func(other string) bool { return other == id }); err != nil {
			return nil, err
		}
	}
	g := growth(old, e)
	if err := c.hold(mode, l, id, g); err != nil {
		if claims != nil {
			c.mu.Lock()
			c.releaseUnique(claims)
			c.mu.Unlock()
		}
		return nil, err
	}
	if s.disk != nil {
		e.lsn = c.lsns.reserve(1) // the record holds it
		if err := s.disk.submit(putOp(c, e, old), true); err != nil {
			c.lsns.abandon(e.lsn, 1)
			c.mu.Lock()
			c.unhold(g)
			c.releaseUnique(claims)
			c.mu.Unlock()
			return nil, s.diskErr(mode, l, id, err)
		}
	}
	c.mu.Lock()
	c.unhold(g)
	c.releaseUnique(claims)
	if c.dropped {
		c.mu.Unlock()
		return nil, &store.Error{Kind: store.ErrCollectionNotFound, Op: mode, Link: l}
	}
	c.commit(e)
	s.purgeLocked(c, now, 16)
	c.mu.Unlock()
	return e.document(), nil
}

// Patch applies a partial update; see store.Patcher. The operations
// (package docpatch, the one implementation serve shares) apply to the
// current version under the document's write lock, so no write comes
// between the version read and the one written; the patched document is
// validated as a replace's is. Without opts.PartitionKey it resolves the
// id as Read does. Cost: a replace's, plus decoding and encoding the
// document.
func (s *Store) Patch(ctx context.Context, l, id string, ops []store.PatchOp, opts *store.PatchOptions) (*store.Document, error) {
	const op = "patch"
	c, err := s.collection(ctx, op, l)
	if err != nil {
		return nil, err
	}
	if err := store.ValidateID(id); err != nil {
		return nil, withOp(err, op, l)
	}
	o := opt.Of(opts)
	spec, err := docpatch.Compile(l, id, ops, o.Condition)
	if err != nil {
		return nil, err
	}
	pk, given, err := c.givenKey(op, l, id, o.PartitionKey, false)
	if err != nil {
		return nil, err
	}
	if !given {
		c.mu.RLock()
		e, err := c.resolve(op, l, id, "", false, s.clock().Unix())
		c.mu.RUnlock()
		if err != nil {
			return nil, err
		}
		pk = e.pk
	}
	return s.put(ctx, c, op, l, id, pk, store.WriteOptions{IfMatch: o.IfMatch, Epoch: o.Epoch}, nil, spec)
}

// patched is the document a patch of mode ("patch", alone or in a batch)
// writes: spec applied (under ctx) to cur, the text of the version it
// replaces, and validated as every written document is. Patch and
// ExecuteBatch share it.
func (c *collection) patched(ctx context.Context, mode, l, id string, spec *docpatch.Spec, cur []byte) (incoming, error) {
	next, err := spec.Apply(ctx, l, id, cur, c.paths)
	if err != nil {
		return incoming{}, err
	}
	return c.prepare(mode, l, next)
}

// precondition checks a write of the document (id, pk) against live, its
// current version (nil when it has none). mode is "create", "replace",
// "upsert" or "delete": a create needs no document, a replace or delete
// one, and a set ifMatch must be live's ETag (an upsert that creates
// ignores it, as Cosmos DB does).
func precondition(mode, l, id, pk string, live *entry, ifMatch string) error {
	switch {
	case mode == "create" && live != nil:
		return store.Errorf(store.ErrConflict, mode, l, id, "a document with this id exists under partition key %s", pk)
	case (mode == "replace" || mode == "delete") && live == nil:
		return &store.Error{Kind: store.ErrNotFound, Op: mode, Link: l, ID: id, Message: "no document under partition key " + pk}
	case mode != "create" && live != nil && ifMatch != "" && ifMatch != live.etag:
		return store.Errorf(store.ErrPreconditionFailed, mode, l, id, "If-Match %s, the stored ETag is %s", ifMatch, live.etag)
	}
	return nil
}

// version builds the version of a document that in writes at now over
// live, its current version (nil when it has none): a fresh ETag, the
// stored text, the expiry, and the feed position, which a replace keeps.
// A stored text above store.MaxDocumentSize is an error wrapping
// store.ErrTooLarge.
func (s *Store) version(c *collection, mode, l string, in *incoming, live *entry, now int64) (*entry, error) {
	e := &entry{id: in.id, pk: in.pk, pkHash: keyHash(in.pk), etag: s.newETag(), ts: now}
	e.expireAt = c.expireAt(now, in.hasTTL, in.ttl)
	e.body = in.body(e.etag, e.ts)
	if len(e.body) > store.MaxDocumentSize {
		return nil, store.Errorf(store.ErrTooLarge, mode, l, in.id, "the stored document would be %d bytes, more than %d", len(e.body), store.MaxDocumentSize)
	}
	if live != nil {
		e.seq = live.seq // a replace keeps the document's place in the feed
	} else {
		e.seq = c.nextSeq.Add(1) - 1
	}
	return e, nil
}

// putOp is the durable write of e over old, the entry of its identity in
// the collection (nil when there is none): an expired old version at
// another feed position is removed in the same commit, and so is the
// record of the ghost that publishing e takes out of the feed
// (collection.displaced). Caller holds the document's write lock, so
// that ghost stays until e publishes.
func putOp(c *collection, e, old *entry) *diskOp {
	o := &diskOp{kind: opPut, bucket: docsBucket(c.uid), seq: e.seq, rec: encodeRecord(e, e.marks())}
	if old != nil && old.seq != e.seq {
		o.del = old.seq
	}
	c.mu.RLock()
	g := c.displaced(e)
	c.mu.RUnlock()
	if g == nil {
		return o
	}
	return &diskOp{kind: opBatch, bucket: o.bucket, batch: []*diskOp{o, deleteOp(c, g, false)}}
}

// deleteOp is the durable delete of e, the current entry of its identity
// (or a ghost): its record removed, the collection's mark raised to its
// LSN. A reshard's clean-up (reshard) of an entry that is not itself a
// copy keeps the record instead, marked moved, as collection.moveOut keeps
// the entry as a ghost.
func deleteOp(c *collection, e *entry, reshard bool) *diskOp {
	if reshard && !e.quiet {
		return &diskOp{kind: opPut, bucket: docsBucket(c.uid), seq: e.seq, rec: encodeRecord(e, markMoved)}
	}
	return &diskOp{kind: opDelete, bucket: docsBucket(c.uid), del: e.seq, mark: e.lsn}
}

// Create adds a document; see store.Documents. The partition-key value
// comes from the body (a document without one has the key store.None); a
// given opts.PartitionKey must equal it. opts.IfMatch is ignored, as
// Cosmos DB ignores it on create.
func (s *Store) Create(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return s.write(ctx, "create", l, "", doc, opts)
}

// Replace overwrites a document; see store.Documents. The document
// replaced is the one with the body's id and partition-key value.
func (s *Store) Replace(ctx context.Context, l, id string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return s.write(ctx, "replace", l, id, doc, opts)
}

// Upsert creates or replaces a document; see store.Documents. As in Cosmos
// DB, opts.IfMatch applies when a document is replaced: an upsert that
// creates ignores it.
func (s *Store) Upsert(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return s.write(ctx, "upsert", l, "", doc, opts)
}

// resolve finds the live entry of id, with the partition key when given.
// Without one it finds the id's only live document; when several
// partition-key values hold the id, that is an error wrapping
// store.ErrBadRequest that lists them. Caller holds c.mu.
func (c *collection) resolve(op, l, id, pk string, given bool, now int64) (*entry, error) {
	if given {
		if e := c.live(id, pk, now); e != nil {
			return e, nil
		}
		return nil, &store.Error{Kind: store.ErrNotFound, Op: op, Link: l, ID: id, Message: "no document under partition key " + pk}
	}
	var found *entry
	var keys []string
	for e := c.byID[id]; e != nil; e = e.next {
		if e.expireAt <= now {
			continue
		}
		if found != nil {
			keys = append(keys, e.pk)
		} else {
			found = e
		}
	}
	switch {
	case found == nil:
		return nil, &store.Error{Kind: store.ErrNotFound, Op: op, Link: l, ID: id}
	case keys != nil:
		keys = append(keys, found.pk)
		return nil, store.Errorf(store.ErrBadRequest, op, l, id,
			"partition key required: %d documents have this id, under keys %s", len(keys), strings.Join(keys, ", "))
	}
	return found, nil
}

// Read returns a document; see store.Documents. Without a partition key it
// finds the document when the id is unique in the collection (always so
// under the default key path "/id"), and is an error wrapping
// store.ErrBadRequest ("partition key required") when several key values
// hold the id. It costs a map lookup under a read lock.
func (s *Store) Read(ctx context.Context, l, id string, opts *store.ReadOptions) (*store.Document, error) {
	const op = "read"
	c, err := s.collection(ctx, op, l)
	if err != nil {
		return nil, err
	}
	if err := store.ValidateID(id); err != nil {
		return nil, withOp(err, op, l)
	}
	var key any
	if opts != nil {
		key = opts.PartitionKey
	}
	pk, given, err := c.givenKey(op, l, id, key, false)
	if err != nil {
		return nil, err
	}
	now := s.clock().Unix()
	c.mu.RLock()
	e, err := c.resolve(op, l, id, pk, given, now)
	c.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return e.document(), nil
}

// Delete removes a document; see store.Documents. Without a partition key
// it resolves the id as Read does.
func (s *Store) Delete(ctx context.Context, l, id string, opts *store.WriteOptions) error {
	const op = "delete"
	c, err := s.collection(ctx, op, l)
	if err != nil {
		return err
	}
	if err := store.ValidateID(id); err != nil {
		return withOp(err, op, l)
	}
	o := opt.Of(opts)
	pk, given, err := c.givenKey(op, l, id, o.PartitionKey, false)
	if err != nil {
		return err
	}
	if !given {
		c.mu.RLock()
		e, err := c.resolve(op, l, id, "", false, s.clock().Unix())
		c.mu.RUnlock()
		if err != nil {
			return err
		}
		pk = e.pk
	}
	var f *dbFence
	if o.Epoch != 0 {
		if f, err = s.enterFence(c, op, l, id, o.Epoch); err != nil {
			return err
		}
	}
	m := s.lockFor(c, pk, id)
	m.Lock()
	defer unlock(m, f)
	now := s.clock().Unix()
	c.mu.RLock()
	e, err := c.resolve(op, l, id, pk, true, now)
	dropped := c.dropped
	c.mu.RUnlock()
	switch {
	case dropped:
		return &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: l}
	case err != nil:
		return err
	}
	if err := precondition(op, l, id, pk, e, o.IfMatch); err != nil {
		return err
	}
	if s.disk != nil {
		if err := s.disk.submit(deleteOp(c, e, o.Reshard), true); err != nil {
			return s.diskErr(op, l, id, err)
		}
	}
	c.mu.Lock()
	if !c.dropped && c.find(id, pk) == e {
		if o.Reshard {
			c.moveOut(e)
		} else {
			c.remove(e)
		}
	}
	s.purgeLocked(c, now, 16)
	c.mu.Unlock()
	return nil
}
