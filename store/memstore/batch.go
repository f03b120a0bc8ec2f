package memstore

import (
	"context"
	"slices"

	"github.com/docshard/docshard/internal/docpatch"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/internal/storecheck"
	"github.com/docshard/docshard/store"
)

var (
	_ store.Batcher = (*Store)(nil)
	_ store.Patcher = (*Store)(nil)
)

// batchOp is a validated operation of a batch.
type batchOp struct {
	mode    string // "create", "read", "replace", "upsert", "delete" or "patch"
	id      string
	in      incoming // create, replace, upsert
	ifMatch string
	patch   *docpatch.Spec // patch
}

// batchDoc is a document a batch touches: as the collection holds it, and
// as the operations so far leave it.
type batchDoc struct {
	id      string
	old     *entry // the collection's entry of (id, key), expired or not; nil when none
	cur     *entry // the live version after the operations so far; nil when none
	written bool   // an operation wrote or deleted it
	last    int    // the index of the last operation that wrote or deleted it
}

// ExecuteBatch runs a transactional batch; see store.Batcher. The
// operations see each other's effects in order (a read after a create
// finds the document), and their changes are published together under the
// collection's lock, so no reader sees part of a batch; in durable mode
// they are one commit, so a crash leaves all or none of them on disk. The
// documents it writes appear in the change feed together, each with an LSN
// of its own in the order of its last write in the batch (see
// commitBatch). While it runs it holds the write locks of the documents it
// names, so single writes to them wait for it.
//
// Each operation is validated as the method of its name validates its
// input, before anything is read: a document must carry partitionKey at
// the collection's key path (a nil partitionKey is an error), a replace's
// document must have the operation's ID, and If-Match is ignored on create
// and read. A patch (store.BatchPatch) applies, as Patch does, to the
// document as the operations before it leave it; its refusals (a missing
// document, a stale If-Match, a false condition, an operation that does
// not apply) fail the batch at its index. The documents' texts may total at most store.MaxDocumentSize
// bytes (Cosmos DB's 2 MB limit on a batch's payload); a larger batch is
// an error wrapping store.ErrTooLarge. An operation's refusal, whether its
// input is malformed or it fails against the stored documents, is a
// *store.BatchError naming its index, wrapping a *store.Error that names
// the operation and document. With opts.Epoch set the batch is a stamped
// write: below its database's fence it is refused with store.ErrFenced
// before any operation runs.
func (s *Store) ExecuteBatch(ctx context.Context, l string, partitionKey any, ops []store.BatchOp, opts *store.BatchOptions) ([]store.BatchResult, error) {
	const op = "batch"
	c, err := s.collection(ctx, op, l)
	if err != nil {
		return nil, err
	}
	if err := storecheck.Batch(l, partitionKey, ops); err != nil {
		return nil, err
	}
	pk, _, err := c.givenKey(op, l, "", partitionKey, false)
	if err != nil {
		return nil, err
	}
	plan, err := c.planBatch(l, pk, ops)
	if err != nil {
		return nil, err
	}
	if o := opt.Of(opts); o.Epoch != 0 {
		f, err := s.enterFence(c, op, l, "", o.Epoch)
		if err != nil {
			return nil, err
		}
		defer f.mu.RUnlock()
	}
	docs := make(map[string]*batchDoc, len(plan))
	for _, p := range plan {
		docs[p.id] = nil
	}
	defer s.lockDocs(c, pk, docs)()

	now := s.clock().Unix()
	c.mu.RLock()
	dropped := c.dropped
	for id := range docs {
		d := &batchDoc{id: id, old: c.find(id, pk)}
		if d.old != nil && d.old.expireAt > now {
			d.cur = d.old
		}
		docs[id] = d
	}
	c.mu.RUnlock()
	if dropped {
		return nil, &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: l}
	}

	results := make([]store.BatchResult, len(plan))
	for i, p := range plan {
		d := docs[p.id]
		if p.mode == "read" {
			if d.cur == nil {
				return nil, &store.BatchError{Index: i, Err: &store.Error{Kind: store.ErrNotFound, Op: p.mode, Link: l, ID: p.id, Message: "no document under partition key " + pk}}
			}
			results[i].Document = d.cur.document()
			continue
		}
		check := p.mode
		if p.patch != nil {
			check = "replace"
		}
		if err := precondition(check, l, p.id, pk, d.cur, p.ifMatch); err != nil {
			return nil, &store.BatchError{Index: i, Err: withOp(err, p.mode, l)}
		}
		if p.mode == "delete" {
			d.written, d.last = true, i
			d.cur = nil
			continue
		}
		in := &p.in
		if p.patch != nil {
			patched, err := c.patched(ctx, p.mode, l, p.id, p.patch, d.cur.body)
			if err != nil {
				return nil, &store.BatchError{Index: i, Err: err}
			}
			in = &patched
		}
		d.written, d.last = true, i
		e, err := s.version(c, p.mode, l, in, d.cur, now)
		if err != nil {
			return nil, &store.BatchError{Index: i, Err: err}
		}
		results[i].Created = d.cur == nil
		d.cur = e
		results[i].Document = e.document()
	}
	if err := s.commitBatch(c, op, l, pk, docs, now); err != nil {
		return nil, err
	}
	return results, nil
}

// planBatch validates a batch's operations against the collection and the
// batch's key text pk, before anything is read or locked.
func (c *collection) planBatch(l, pk string, ops []store.BatchOp) ([]batchOp, error) {
	plan := make([]batchOp, len(ops))
	total := 0
	for i, o := range ops {
		p := batchOp{mode: o.Kind.String(), id: o.ID, ifMatch: o.IfMatch}
		var err error
		switch o.Kind {
		case store.BatchRead, store.BatchDelete, store.BatchReplace:
			err = withOp(store.ValidateID(o.ID), p.mode, l)
		case store.BatchCreate, store.BatchUpsert:
		case store.BatchPatch:
			if err = withOp(store.ValidateID(o.ID), p.mode, l); err == nil {
				p.patch, err = docpatch.Compile(l, o.ID, o.Patch, o.Condition)
			}
		default:
			err = store.Errorf(store.ErrBadRequest, "batch", l, o.ID, "unknown operation kind %d", int(o.Kind))
		}
		if err == nil && o.Kind != store.BatchRead && o.Kind != store.BatchDelete && o.Kind != store.BatchPatch {
			err = c.planDocument(&p, l, pk, o)
			total += len(o.Doc)
		}
		if err != nil {
			return nil, &store.BatchError{Index: i, Err: err}
		}
		if p.mode == "create" || p.mode == "read" {
			p.ifMatch = ""
		}
		plan[i] = p
	}
	if total > store.MaxDocumentSize {
		return nil, store.Errorf(store.ErrTooLarge, "batch", l, "", "the batch's documents are %d bytes, more than %d", total, store.MaxDocumentSize)
	}
	return plan, nil
}

// planDocument validates the document of a create, replace or upsert.
func (c *collection) planDocument(p *batchOp, l, pk string, o store.BatchOp) error {
	in, err := c.prepare(p.mode, l, o.Doc)
	if err != nil {
		if o.ID == "" {
			o.ID = docID(o.Doc)
		}
		return withID(err, o.ID)
	}
	switch {
	case o.Kind == store.BatchReplace && in.id != o.ID:
		return store.Errorf(store.ErrBadRequest, p.mode, l, o.ID, "the document's id is %q", in.id)
	case in.pk != pk:
		return store.Errorf(store.ErrBadRequest, p.mode, l, in.id,
			"the document's partition key (%s at %s) differs from the batch's (%s)", in.pk, c.paths, pk)
	}
	p.id, p.in = in.id, in
	return nil
}

// lockDocs takes the write locks of the documents (id, pk) for the ids of
// docs, in the order of their index so that batches never deadlock, and
// returns what releases them.
func (s *Store) lockDocs(c *collection, pk string, docs map[string]*batchDoc) func() {
	idx := make([]int, 0, len(docs))
	for id := range docs {
		idx = append(idx, s.lockIndex(c, pk, id))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s.locks[i].Lock()
	}
	return func() {
		for _, i := range idx {
			s.locks[i].Unlock()
		}
	}
}

// commitBatch makes a batch's changes durable in one commit (in durable
// mode) and publishes them together. The documents it writes take one LSN
// each, in the order of their last write in the batch, as single writes
// in that order would: durably they are reserved before the records are
// encoded (so the records hold them) and given up if the commit fails, as
// a single write's are (see lsnClock); in memory they are taken as the
// documents publish. A deleted document's LSN raises the collection's mark
// on disk, as a single delete's does.
func (s *Store) commitBatch(c *collection, op, l, pk string, docs map[string]*batchDoc, now int64) error {
	var written []*batchDoc
	puts := 0
	for _, d := range docs {
		if d.written && (d.cur != nil || d.old != nil) {
			written = append(written, d)
			if d.cur != nil {
				puts++
			}
		}
	}
	slices.SortFunc(written, func(a, b *batchDoc) int { return a.last - b.last })
	var claims []uniqueClaim
	if c.uniq != nil {
		for _, d := range written {
			if d.cur != nil {
				claims = append(claims, uniqueClaim{id: d.id, tuples: c.uniq.tuples(pk, d.cur.body), at: d.last})
			}
		}
		if at, err := c.claimUnique(op, l, now, claims, func(id string) bool { return docs[id] != nil && docs[id].written }); err != nil {
			return &store.BatchError{Index: at, Err: err}
		}
	}
	g := batchGrowth(written)
	if err := c.hold(op, l, "", g); err != nil {
		if claims != nil {
			c.mu.Lock()
			c.releaseUnique(claims)
			c.mu.Unlock()
		}
		return err
	}
	if s.disk != nil && len(written) > 0 {
		first := c.lsns.reserve(puts) // none when the batch only deletes
		ops := make([]*diskOp, len(written))
		next := first
		for i, d := range written {
			if d.cur == nil {
				ops[i] = deleteOp(c, d.old, false)
				continue
			}
			d.cur.lsn = next // the record holds it
			next++
			ops[i] = putOp(c, d.cur, d.old)
		}
		if err := s.disk.submit(&diskOp{kind: opBatch, bucket: docsBucket(c.uid), batch: ops}, true); err != nil {
			c.lsns.abandon(first, puts)
			c.mu.Lock()
			c.unhold(g)
			c.releaseUnique(claims)
			c.mu.Unlock()
			return s.diskErr(op, l, "", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unhold(g)
	c.releaseUnique(claims)
	if c.dropped {
		return &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: l}
	}
	for _, d := range written {
		switch {
		case d.cur != nil:
			c.commit(d.cur)
		case c.find(d.id, pk) == d.old:
			c.remove(d.old)
		}
	}
	s.purgeLocked(c, now, 16)
	return nil
}

// batchGrowth is what a batch's written documents add to the usage, as
// commitBatch publishes and removes them: the net growth of each measure,
// 0 when it does not grow (a batch that deletes as much as it adds is
// never refused for quota).
func batchGrowth(written []*batchDoc) room {
	var docs, bytes int64
	for _, d := range written {
		if d.cur != nil {
			docs++
			bytes += int64(len(d.cur.body))
		}
		if d.old != nil {
			docs--
			bytes -= int64(len(d.old.body))
		}
	}
	return room{docs: max(docs, 0), bytes: max(bytes, 0)}
}

// docID returns the string "id" of a document that was refused, to name
// it in the error; "" when it cannot be found.
func docID(doc []byte) string {
	v, err := findMember(doc, "id")
	if err != nil || len(v) < 2 || v[0] != '"' {
		return ""
	}
	return quoted(v).Decode()
}
