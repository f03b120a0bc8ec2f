package memstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/store"
)

var _ store.ChangeFeeder = (*Store)(nil)

// lsnClock hands out a collection's log sequence numbers (LSNs), one per
// write, and says up to which LSN the change feed is settled: every LSN at
// or below the horizon belongs to a write that is published (in the index,
// unless written again or deleted since) or that failed. A reader returns
// nothing above the horizon, so a write that took its LSN early and
// publishes late is never passed over.
//
// In memory a write takes its LSN when it publishes, under the collection's
// lock, so the horizon is simply the last LSN. A durable write needs its
// LSN before its record goes to disk, and concurrent writers commit and
// publish in any order: their LSNs stay pending until they publish. A
// failed durable write's LSN is settled only once a higher LSN is
// published (at once if one is already): that one's record, on disk,
// keeps the next Open's LSNs above it (see Store.ReadChanges), so no
// position handed out is ever reused.
type lsnClock struct {
	last    atomic.Uint64 // the highest LSN handed out
	mu      sync.Mutex
	pending []pendingLSN // handed out and not settled, ascending
	settled uint64       // the highest LSN settled by a publish
}

type pendingLSN struct {
	lsn       uint64
	abandoned bool
}

// next hands out an LSN that is settled at once. Caller holds the
// collection's lock for writing and publishes the entry before releasing
// it.
func (k *lsnClock) next() uint64 { return k.last.Add(1) }

// reserve hands out n consecutive LSNs, the first of which it returns,
// that stay pending until settle or abandon: one for a single write, one
// per document for a batch's writes (none, n = 0, for a batch that only
// deletes).
func (k *lsnClock) reserve(n int) uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	first := k.last.Add(uint64(n)) - uint64(n) + 1
	for i := range uint64(n) {
		k.pending = append(k.pending, pendingLSN{lsn: first + i})
	}
	return first
}

// settle ends lsn's pending state, and that of abandoned LSNs below it.
// Caller holds the collection's lock for writing and publishes lsn's entry
// before releasing it.
func (k *lsnClock) settle(lsn uint64) {
	k.mu.Lock()
	k.pending = slices.DeleteFunc(k.pending, func(p pendingLSN) bool {
		return p.lsn == lsn || p.abandoned && p.lsn < lsn
	})
	k.settled = max(k.settled, lsn)
	k.mu.Unlock()
}

// abandon ends the pending state of the n LSNs from first, reserved
// together by a write that failed, once a higher LSN is settled: now if
// one is, else at that one's settle.
func (k *lsnClock) abandon(first uint64, n int) {
	gave := func(lsn uint64) bool { return lsn >= first && lsn-first < uint64(n) }
	k.mu.Lock()
	k.pending = slices.DeleteFunc(k.pending, func(p pendingLSN) bool { return gave(p.lsn) && k.settled > p.lsn })
	for i := range k.pending {
		if gave(k.pending[i].lsn) {
			k.pending[i].abandoned = true
		}
	}
	k.mu.Unlock()
}

// horizon returns the highest LSN up to which every write is settled.
// Caller holds the collection's lock, so nothing publishes meanwhile.
func (k *lsnClock) horizon() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.pending) > 0 {
		return k.pending[0].lsn - 1
	}
	return k.last.Load()
}

// commit publishes e as the current version of its document with its LSN:
// in memory it takes the next one here; durably e carries the LSN its
// record was written with (reserved), settled now. Caller holds c.mu for
// writing.
func (c *collection) commit(e *entry) {
	if e.lsn == 0 {
		e.lsn = c.lsns.next()
	} else {
		c.lsns.settle(e.lsn)
	}
	c.publish(e)
}

// changeToken is a change-feed continuation: the collection incarnation,
// the feed position (an LSN: everything up to it has been read) and, for a
// feed scoped to a partition key, a hash of the key's identity text.
type changeToken struct {
	V   int    `json:"v"`
	UID string `json:"u"`
	LSN uint64 `json:"l"`
	Key string `json:"k,omitempty"`
}

// keyBinding returns the Key of a change token: empty for the whole
// collection, else FNV-128a of the key text.
func keyBinding(pk string, scoped bool) string {
	if !scoped {
		return ""
	}
	h := fnv.New128a()
	h.Write([]byte(pk))
	return hex.EncodeToString(h.Sum(nil))
}

// ReadChanges reads a collection's change feed; see store.ChangeFeeder.
// Every write (create, replace, upsert) stamps the document with the
// collection's next log sequence number (LSN), and the feed is the current
// documents in LSN order: a document written several times appears once,
// at its last write; a deleted document, or one whose TTL has expired,
// does not appear (expiry is not a write). The continuation holds the
// collection's incarnation and the LSN read up to, and for a scoped feed a
// hash of the key; it is refused (store.ErrBadRequest) with another
// collection, a collection deleted and created again, another key, or a
// position past the feed's end. A page never goes past the horizon of
// settled writes (see lsnClock), so a reader polling from a token sees
// every write made after that token's position at least once, at its
// latest version, in LSN order, also across a durable store's restarts: an
// LSN is persisted with the document, and the highest LSN of a deleted or
// expired record is kept, so LSNs after Open are above every position
// handed out before. A page costs two binary searches and one step per
// document returned, under the collection's read lock; a page scoped to a
// partition key steps over the other keys' documents too.
//
// With opts.HideReshard a reshard's copies (writes marked
// store.WriteOptions.Reshard) are skipped, and a document its clean-up
// deleted (a delete so marked) keeps its last version in the feed until
// its id and key are written in the collection again: the document moved,
// and a reader behind the move still reads the version the application
// wrote here. A durable store keeps the marks in its records (a copy's,
// and a moved document's record until its id and key are written again),
// so after Open, and after Salvage, these feeds read as before.
func (s *Store) ReadChanges(ctx context.Context, l string, opts *store.ChangeFeedOptions) (*store.ChangePage, error) {
	const op = "read changes"
	o := opt.Of(opts)
	c, pk, scoped, err := s.scoped(ctx, op, l, o.PartitionKey)
	if err != nil {
		return nil, err
	}
	tok := changeToken{V: tokenVersion, UID: c.uid, Key: keyBinding(pk, scoped)}
	if o.Continuation != "" {
		var got changeToken
		if err := cursor.Decode(o.Continuation, &got); err != nil || got.V != tokenVersion || got.UID == "" {
			return nil, localquery.BadToken(op, l, o.Continuation, "malformed")
		}
		switch {
		case got.UID != tok.UID:
			return nil, localquery.BadToken(op, l, o.Continuation, "issued for another collection (or one deleted since)")
		case got.Key != tok.Key:
			return nil, localquery.BadToken(op, l, o.Continuation, "issued for a change feed of another partition-key scope")
		}
		tok.LSN = got.LSN
	}
	size := pageSize(o.PageSize, s.opts.PageSize, s.opts.PageSize)
	now := s.clock().Unix()
	s.purge(c, now)
	page := &store.ChangePage{}
	c.mu.RLock()
	h := c.lsns.horizon()
	switch {
	case o.Continuation == "" && o.FromNow:
		tok.LSN = h
	case tok.LSN > h:
		c.mu.RUnlock()
		return nil, localquery.BadToken(op, l, o.Continuation, "position "+strconv.FormatUint(tok.LSN, 10)+" is past the end of the feed")
	default:
		tok.LSN = c.readChanges(page, tok.LSN, h, size, s.opts.MaxPageBytes, newScope(now, scoped, pk), o.HideReshard)
	}
	c.mu.RUnlock()
	page.Continuation = cursor.Encode(tok)
	return page, nil
}

// readChanges fills page with the entries in scope after position from, up
// to h, at most size of them and maxBytes of text (at least one), and
// returns the position after the page: the last LSN it holds when it is
// full, h when the reader has caught up. Caller holds c.mu.
func (c *collection) readChanges(page *store.ChangePage, from, h uint64, size, maxBytes int, sc scope, hide bool) uint64 {
	bytes := 0
	if h > from && page.Items == nil {
		// At most one entry per position; sized once, not grown by doubling
		// (a catching-up reader's pages hold thousands).
		page.Items = make([]json.RawMessage, 0, min(uint64(size), h-from, 1<<13))
	}
	for e := range c.changes.after(from) {
		if e.lsn > h {
			break
		}
		if e.expireAt <= sc.now || sc.scoped && !sc.keyIn(e.pkHash, e.pk) || (hide && e.quiet) || (!hide && e.ghost) {
			continue
		}
		if len(page.Items) == size || bytes+len(e.body) > maxBytes && len(page.Items) > 0 {
			return from
		}
		page.Items = append(page.Items, e.body)
		bytes += len(e.body)
		from = e.lsn
	}
	return h
}
