package shardstate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/internal/procid"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
)

// CollectionID is the id of the collection, in each database, that holds
// the database's state document, its history and the routers' leases.
const CollectionID = "_docshard"

// KeyPath is the partition-key path of the state collection: every document
// in it has a "kind" ("state", "history", "lease" or "progress"), and documents of one
// kind share a logical partition.
const KeyPath = "/kind"

// Format names the layout of the documents this package writes. A document
// in the state collection without it is foreign, and refused.
const Format = "docshard.state/1"

// The ids and kinds of the state collection's documents.
const (
	stateID     = "state"
	kindState   = "state"
	kindHistory = "history"
	kindLease   = "lease"
)

// Errors of the package. Every error it returns for these conditions wraps
// one of them; store errors pass through wrapped.
var (
	// ErrNoState: the database has no state document yet (Init creates one).
	ErrNoState = errors.New("shardstate: the database has no state document")
	// ErrConflict: another writer changed the state first. The error is a
	// *ConflictError carrying the state that won.
	ErrConflict = errors.New("shardstate: the state changed meanwhile")
	// ErrInvalidState: a document in the state collection is broken,
	// truncated, foreign, or describes a resolver that cannot be decoded.
	// The error is a *DocumentError naming the document.
	ErrInvalidState = errors.New("shardstate: invalid state document")
)

// ConflictError reports a compare-and-swap that lost: Current is the state
// now in force (nil when it could not be read), to retry against.
type ConflictError struct {
	Database string
	Expected int64  // the version the change was based on
	Current  *State // the state that won
}

// Error implements error.
func (e *ConflictError) Error() string {
	if e.Current == nil {
		return fmt.Sprintf("shardstate: %s: the state changed after version %d", e.Database, e.Expected)
	}
	return fmt.Sprintf("shardstate: %s: the state changed after version %d; it is now version %d (by %s at %s)",
		e.Database, e.Expected, e.Current.Version, e.Current.UpdatedBy, e.Current.UpdatedAt.Format(time.RFC3339))
}

// Unwrap returns ErrConflict.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// DocumentError reports a document of the state collection that cannot be
// used, naming it. It wraps ErrInvalidState and the cause.
type DocumentError struct {
	Link string // the state collection
	ID   string // the document
	Err  error
}

// Error implements error.
func (e *DocumentError) Error() string {
	return fmt.Sprintf("shardstate: %s document %q: %v", e.Link, e.ID, e.Err)
}

// Unwrap returns ErrInvalidState and the cause.
func (e *DocumentError) Unwrap() []error { return []error{ErrInvalidState, e.Err} }

// State is one version of a database's shared state. A State is a value:
// Load returns a new one each time, and nothing changes it afterwards.
type State struct {
	// Database is the database link, "dbs/{db}".
	Database string
	// Version grows by exactly one per change; the first is 1.
	Version int64
	// Epoch grows with each change that routers must see before they
	// write again (Change.NewEpoch): by one, or past the store's fence
	// when it had fallen below it; the first is 1. Routers stamp their
	// writes with it (store.WriteOptions.Epoch).
	Epoch int64
	// Resolver is the resolver's JSON, as resolver.Marshal writes it.
	Resolver json.RawMessage
	// Phase is where a long-running change (a reshard, a spillover) records
	// its progress, as JSON; nil when none is under way.
	Phase json.RawMessage
	// UpdatedBy and UpdatedAt say who made this version and when (the
	// writer's clock).
	UpdatedBy string
	UpdatedAt time.Time
	// Reason says in words what this version changed and why (Change.Reason:
	// "reshard 3 → 4 collections: copying"); empty when its writer gave none.
	Reason string
	// ETag is the state document's ETag when this version was read: the
	// compare-and-swap token of the next change. Empty for history.
	ETag string
}

// Decode returns the state's resolver. The resolver kinds it uses must be
// registered (import their packages: hashring, rangeresolver, lookup, ...).
// Cost: decoding the resolver, up to resolver.MaxWork (about a second for
// the largest trees).
func (s *State) Decode() (resolver.Resolver, error) {
	return resolver.Unmarshal(s.Resolver)
}

// DecodeDocument is Decode for a state read with Peek: a resolver that
// does not decode is reported as Load reports it, a *DocumentError naming
// the state document (wrapping ErrInvalidState). Cost: Decode's.
func (s *State) DecodeDocument() (resolver.Resolver, error) {
	r, err := s.Decode()
	if err != nil {
		coll, _ := CollectionLink(s.Database)
		return nil, &DocumentError{Link: coll, ID: stateID, Err: resolverError(s.Version, err)}
	}
	return r, nil
}

// resolverError explains a resolver of version v that does not decode.
func resolverError(v int64, err error) error {
	return fmt.Errorf("resolver of version %d: %w", v, err)
}

// document is the stored form of a State (and of a history entry).
type document struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Format    string          `json:"format"`
	Database  string          `json:"database"`
	Version   int64           `json:"version"`
	Epoch     int64           `json:"epoch"`
	Resolver  json.RawMessage `json:"resolver"`
	Phase     json.RawMessage `json:"phase,omitempty"`
	UpdatedBy string          `json:"updatedBy"`
	UpdatedAt time.Time       `json:"updatedAt"`
	Reason    string          `json:"reason,omitempty"`
	// StateETag is, on a copy of the state (StateCopies), the state
	// document's ETag when it held this version.
	StateETag string `json:"stateETag,omitempty"`
}

func (s *State) document(id, kind string) document {
	return document{ID: id, Kind: kind, Format: Format, Database: s.Database, Version: s.Version, Epoch: s.Epoch,
		Resolver: s.Resolver, Phase: s.Phase, UpdatedBy: s.UpdatedBy, UpdatedAt: s.UpdatedAt, Reason: s.Reason}
}

// CollectionLink returns the link of a database's state collection,
// "dbs/{db}/colls/_docshard". dbLink must be a database link.
func CollectionLink(dbLink string) (string, error) {
	db, err := link.ParseDatabase(dbLink)
	if err != nil {
		return "", fmt.Errorf("shardstate: database link %q: %w", dbLink, err)
	}
	return "dbs/" + db + "/colls/" + CollectionID, nil
}

// names returns the canonical database link and the state collection.
func names(dbLink string) (db, coll string, err error) {
	if coll, err = CollectionLink(dbLink); err != nil {
		return "", "", err
	}
	return coll[:len(coll)-len("/colls/"+CollectionID)], coll, nil
}

// Load reads the current state of a database. It fails with an error
// wrapping ErrNoState when there is none, and a *DocumentError (wrapping
// ErrInvalidState) when the document is broken, foreign, or names a
// resolver that does not decode. Cost: one point read and one decode of
// the resolver.
func Load(ctx context.Context, st store.Store, dbLink string) (*State, error) {
	return load(ctx, st, dbLink, true)
}

// Peek is Load without decoding the resolver: the document is checked
// (format, database, version, epoch, a resolver present) but the
// resolver's JSON is not decoded, so State.Decode may still fail with an
// error the caller reports. A follower peeks every poll and decodes only a
// resolver that changed: decoding costs up to resolver.MaxWork (about a
// second for the largest trees). Cost: one point read.
func Peek(ctx context.Context, st store.Store, dbLink string) (*State, error) {
	return load(ctx, st, dbLink, false)
}

// load is Load, decoding the resolver to check it when decode is set.
func load(ctx context.Context, st store.Store, dbLink string, decode bool) (*State, error) {
	db, coll, d, err := readState(ctx, st, dbLink)
	if err != nil {
		return nil, err
	}
	s, err := parse(d.Body, db, kindState, decode)
	if err != nil {
		return nil, &DocumentError{Link: coll, ID: stateID, Err: err}
	}
	s.ETag = d.ETag
	return s, nil
}

// ETag returns the ETag of a database's state document, read without
// parsing it: a cheap test of whether the state changed since a Load or
// Peek (State.ETag). A missing document is ErrNoState. Cost: one point
// read.
func ETag(ctx context.Context, st store.Store, dbLink string) (string, error) {
	_, _, d, err := readState(ctx, st, dbLink)
	if err != nil {
		return "", err
	}
	return d.ETag, nil
}

// readState reads a database's state document as stored: the database and
// state collection links, and the document. A missing one is ErrNoState.
func readState(ctx context.Context, st store.Store, dbLink string) (db, coll string, d *store.Document, err error) {
	st = retry.Ensure(st)
	if db, coll, err = names(dbLink); err != nil {
		return "", "", nil, err
	}
	d, err = st.Read(ctx, coll, stateID, &store.ReadOptions{PartitionKey: kindState})
	if errors.Is(err, store.ErrNotFound) {
		return "", "", nil, fmt.Errorf("%w: %s (no document %q in %s)", ErrNoState, db, stateID, coll)
	}
	if err != nil {
		return "", "", nil, fmt.Errorf("shardstate: reading the state of %s: %w", db, err)
	}
	return db, coll, d, nil
}

// parse decodes and validates one stored state or history document, its
// resolver too when decode is set.
func parse(body []byte, db, kind string, decode bool) (*State, error) {
	var d document
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("not a state document: %w", err)
	}
	switch {
	case d.Format != Format:
		return nil, fmt.Errorf("format %q, want %q: the document was not written by docshard, or by an incompatible version", d.Format, Format)
	case d.Kind != kind:
		return nil, fmt.Errorf("kind %q, want %q", d.Kind, kind)
	case d.Database != db:
		return nil, fmt.Errorf("database %q, want %q: the document belongs to another database", d.Database, db)
	case d.Version < 1:
		return nil, fmt.Errorf("version %d: versions start at 1", d.Version)
	case d.Epoch < 1:
		// An epoch may pass the version: a change restoring a state set
		// below the store's fence takes the fence plus one (newEpoch).
		return nil, fmt.Errorf("epoch %d: epochs start at 1", d.Epoch)
	case len(d.Resolver) == 0:
		return nil, errors.New("no resolver")
	}
	if decode {
		if _, err := resolver.Unmarshal(d.Resolver); err != nil {
			return nil, resolverError(d.Version, err)
		}
	}
	if bytes.Equal(bytes.TrimSpace(d.Phase), []byte("null")) {
		d.Phase = nil
	}
	return &State{Database: d.Database, Version: d.Version, Epoch: d.Epoch, Resolver: d.Resolver, Phase: d.Phase,
		UpdatedBy: d.UpdatedBy, UpdatedAt: d.UpdatedAt, Reason: d.Reason, ETag: d.StateETag}, nil
}

// InitOptions qualify Init. A nil *InitOptions means defaults.
type InitOptions struct {
	// By names the writer; empty means the process's "host/pid".
	By string
	// Spec is the state collection's template when Init creates it; nil
	// means defaults. Its partition-key path is always KeyPath.
	Spec *store.CollectionSpec
}

// Init creates a database's state: the state collection when it is missing,
// and version 1 with resolver r. When a state exists already (another
// process was first) it fails with a *ConflictError carrying that state.
// When none exists but leases, history, copies of the state or a raised fence show a fleet
// routed the database by one (its document was deleted), it creates
// nothing and fails with an *InUseError (wrapping ErrInUse): a new version
// 1 would fork the placement; Restore is the recovery. Cost: a collection
// create (and a collection-info read when it exists), InUse's reads, one
// document create, and StateCopies reads and creates for the copies of the
// state. A state collection partitioned by another path than
// KeyPath is a *store.KeyPathError.
func Init(ctx context.Context, st store.Store, dbLink string, r resolver.Resolver, opts *InitOptions) (*State, error) {
	st = retry.Ensure(st)
	t, err := readTraces(ctx, st, dbLink)
	if err != nil {
		return nil, err
	}
	if err := t.inUse(); err != nil {
		if cur, lerr := Load(ctx, st, t.db); lerr == nil {
			// Another process created it meanwhile (its lease, say).
			return nil, &ConflictError{Database: t.db, Expected: 0, Current: cur}
		}
		return nil, err
	}
	return create(ctx, st, t, r, opts, 1, 1)
}

// create makes the state collection exist and creates the state document
// of t's database at version and epoch with resolver r, or fails with a
// *ConflictError carrying the state that exists.
func create(ctx context.Context, st store.Store, t *traces, r resolver.Resolver, opts *InitOptions, version, epoch int64) (*State, error) {
	db, coll := t.db, t.coll
	o := opt.Of(opts)
	text, err := canonical(r)
	if err != nil {
		return nil, err
	}
	if err := ensureCollection(ctx, st, coll, o.Spec); err != nil {
		return nil, err
	}
	s := &State{Database: db, Version: version, Epoch: epoch, Resolver: text, UpdatedBy: by(o.By), UpdatedAt: now()}
	body, err := json.Marshal(s.document(stateID, kindState))
	if err != nil {
		return nil, fmt.Errorf("shardstate: encoding the state of %s: %w", db, err)
	}
	d, err := st.Create(ctx, coll, body, &store.WriteOptions{PartitionKey: kindState})
	if errors.Is(err, store.ErrConflict) {
		cur, lerr := Load(ctx, st, db)
		if lerr != nil {
			return nil, fmt.Errorf("shardstate: %s has a state already, and reading it failed: %w", db, lerr)
		}
		return nil, &ConflictError{Database: db, Expected: 0, Current: cur}
	}
	if err != nil {
		return nil, fmt.Errorf("shardstate: creating the state of %s: %w", db, err)
	}
	s.ETag = d.ETag
	_ = spread(ctx, st, coll, s) // copies a deleted state left behind (best effort, as in Publish)
	return s, nil
}

// LoadOrInit loads a database's state, or creates it with seed when there
// is none (when another process creates it first, that one is returned).
// A nil seed makes it Load.
func LoadOrInit(ctx context.Context, st store.Store, dbLink string, seed resolver.Resolver, opts *InitOptions) (*State, error) {
	s, err := Load(ctx, st, dbLink)
	if err == nil || seed == nil || !errors.Is(err, ErrNoState) {
		return s, err
	}
	s, err = Init(ctx, st, dbLink, seed, opts)
	var ce *ConflictError
	if errors.As(err, &ce) && ce.Current != nil {
		return ce.Current, nil
	}
	return s, err
}

// ensureCollection makes the state collection exist, partitioned by
// KeyPath, through store.EnsureCollections (the one conflict rule: one
// that exists partitioned by another path is a *store.KeyPathError).
func ensureCollection(ctx context.Context, st store.Store, coll string, spec *store.CollectionSpec) error {
	sp := opt.Of(spec)
	sp.PartitionKeyPath = KeyPath
	if _, err := store.EnsureCollections(retry.Repeatable(ctx), st, store.Wanted{Create: []string{coll}, Spec: sp}); err != nil {
		return fmt.Errorf("shardstate: the state collection: %w", err)
	}
	return nil
}

// canonical returns r's JSON, checked to decode again: every router must
// be able to read what is published.
func canonical(r resolver.Resolver) (json.RawMessage, error) {
	text, err := resolver.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("shardstate: encoding the resolver: %w", err)
	}
	if _, err := resolver.Unmarshal(text); err != nil {
		return nil, fmt.Errorf("shardstate: the resolver's JSON does not decode again, so no router could read it: %w", err)
	}
	return text, nil
}

func by(s string) string {
	if s == "" {
		return procid.Identity()
	}
	return s
}

// now is the clock of UpdatedAt, in UTC without a monotonic reading.
func now() time.Time { return time.Now().UTC().Round(0) }

// Change is what Publish changes. Its zero value changes nothing but the
// version (and who made it).
type Change struct {
	// Resolver is the new resolver; nil keeps the current one.
	Resolver resolver.Resolver
	// Phase is the new phase; nil keeps the current one, and the JSON
	// literal null clears it.
	Phase json.RawMessage
	// NewEpoch raises the epoch by one (or, on a store.Fencer whose fence
	// is at or above the current epoch, to the fence plus one: one change
	// restores a state set below the fence): routers stamping writes with
	// the old epoch are refused by a store.Fencer, and WaitForRouters tells
	// when every router has moved on.
	NewEpoch bool
	// By names the writer; empty means the process's "host/pid".
	By string
	// Reason says in words what the change does and why, for the history
	// (State.Reason); empty gives none.
	Reason string
}

// Publish makes the change to the state cur as the next version, by
// compare-and-swap on cur.ETag. When another writer changed the state since
// cur was read, nothing is written and the error is a *ConflictError
// carrying the state that won. Before the swap it records cur in the
// history (so history holds exactly the versions that were once current).
// With ch.NewEpoch on a store.Fencer, it raises the store's fence to the
// new epoch after the swap; if that fails, the new state is returned with
// the error, and RaiseFence finishes the job.
//
// After the swap it brings the copies of the state the routers poll
// (StateCopies) forward, as far as it can: a copy it could not write is
// brought forward by the routers reading it (on their next read of the
// state document itself) and by WaitForRouters.
//
// Cost: a history create, a conditional replace, StateCopies point reads
// and as many writes, and for a new epoch on a fencing store, a fence read
// and a fence raise (which waits out the database's writes in progress).
func Publish(ctx context.Context, st store.Store, cur *State, ch Change) (*State, error) {
	st = retry.Ensure(st)
	if cur == nil || cur.ETag == "" {
		return nil, errors.New("shardstate: Publish needs the current state as Load returned it (with its ETag)")
	}
	db, coll, err := names(cur.Database)
	if err != nil {
		return nil, err
	}
	next := *cur
	next.Version++
	next.UpdatedBy, next.UpdatedAt, next.ETag, next.Reason = by(ch.By), now(), "", ch.Reason
	if ch.NewEpoch {
		if next.Epoch, err = newEpoch(ctx, st, cur); err != nil {
			return nil, err
		}
	}
	if ch.Resolver != nil {
		if next.Resolver, err = canonical(ch.Resolver); err != nil {
			return nil, err
		}
	}
	if ch.Phase != nil {
		if !json.Valid(ch.Phase) {
			return nil, errors.New("shardstate: Change.Phase is not valid JSON")
		}
		next.Phase = ch.Phase
		if bytes.Equal(bytes.TrimSpace(ch.Phase), []byte("null")) {
			next.Phase = nil
		}
	}
	if err := record(ctx, st, coll, cur); err != nil {
		return nil, err
	}
	body, err := json.Marshal(next.document(stateID, kindState))
	if err != nil {
		return nil, fmt.Errorf("shardstate: encoding version %d of %s: %w", next.Version, db, err)
	}
	d, err := st.Replace(ctx, coll, stateID, body, &store.WriteOptions{PartitionKey: kindState, IfMatch: cur.ETag})
	var now *State // the state read after a refused or unknown swap
	if err != nil && (retry.OutcomeUnknown(err) || errors.Is(err, store.ErrPreconditionFailed)) {
		// The swap may have landed with its answer lost (the retry layer
		// then reports the unknown outcome, or a caller's Repeatable
		// context the refusal of its second attempt): a state that is
		// exactly this write (its version, writer, time and epoch) is it,
		// and the rest of the publish (the fence) still has to happen.
		if c, lerr := Load(ctx, st, db); lerr == nil {
			now = c
			if c.Version == next.Version && c.UpdatedBy == next.UpdatedBy && c.UpdatedAt.Equal(next.UpdatedAt) && c.Epoch == next.Epoch {
				d, err = &store.Document{ETag: c.ETag}, nil
			}
		}
	}
	switch {
	case errors.Is(err, store.ErrPreconditionFailed):
		// Another writer's state (nil when it could not be read).
		return nil, &ConflictError{Database: db, Expected: cur.Version, Current: now}
	case errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("%w: %s (it was deleted after version %d was read)", ErrNoState, db, cur.Version)
	case err != nil:
		return nil, fmt.Errorf("shardstate: publishing version %d of %s: %w", next.Version, db, err)
	}
	next.ETag = d.ETag
	// The copies the routers poll (best effort: a router brings its own
	// forward from the state document, WaitForRouters every one).
	_ = spread(ctx, st, coll, &next)
	if ch.NewEpoch {
		if err := RaiseFence(ctx, st, &next); err != nil {
			return &next, err
		}
	}
	return &next, nil
}

// newEpoch is the epoch of the change after cur that raises it: one above
// every epoch a router may stamp its writes with, so the store refuses the
// writes of every router that has not seen the change. That is cur.Epoch+1,
// unless the store's fence is at or above cur.Epoch (a state set below the
// fence, whose every write is refused: routers that read an epoch up to the
// fence may still hold it), then the fence plus one, so one change restores
// a wedged state. Cost: a fence read on a store.Fencer; nothing otherwise.
func newEpoch(ctx context.Context, st store.Store, cur *State) (int64, error) {
	e := cur.Epoch + 1
	if f, ok := st.(store.Fencer); ok {
		fence, err := f.Fence(ctx, cur.Database)
		if err != nil {
			return 0, fmt.Errorf("shardstate: reading the fence of %s for a new epoch: %w", cur.Database, err)
		}
		e = max(e, fence+1)
	}
	return e, nil
}

// HistoryKept is how many versions the history keeps: recording version v
// deletes version v-HistoryKept, so the history partition holds at most
// HistoryKept documents (and any a publish that crashed between the two
// left), each at most a state document's size. The last version recorded,
// which InUse and Restore read, is always kept.
const HistoryKept = 1000

// record writes s to the history, unless it is there already (a writer
// that lost the swap, or crashed after recording, wrote the same content:
// one version has one content), and deletes the version HistoryKept
// below it.
func record(ctx context.Context, st store.Store, coll string, s *State) error {
	body, err := json.Marshal(s.document(historyID(s.Version), kindHistory))
	if err != nil {
		return fmt.Errorf("shardstate: encoding version %d of %s: %w", s.Version, s.Database, err)
	}
	// Repeatable: a second attempt's conflict is the first one's record.
	_, err = st.Create(retry.Repeatable(ctx), coll, body, &store.WriteOptions{PartitionKey: kindHistory})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("shardstate: recording version %d of %s in its history: %w", s.Version, s.Database, err)
	}
	if old := s.Version - HistoryKept; old >= 1 {
		err = st.Delete(retry.Repeatable(ctx), coll, historyID(old), &store.WriteOptions{PartitionKey: kindHistory})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("shardstate: deleting version %d of %s from its history (it keeps %d): %w", old, s.Database, HistoryKept, err)
		}
	}
	return nil
}

// historyID is the id of version v's history document; zero-padded so ids
// sort as versions do.
func historyID(v int64) string { return fmt.Sprintf("v%012d", v) }

// RaiseFence raises the store's fence for s's database to s.Epoch when the
// store is a store.Fencer. It is idempotent, so a process resuming a change
// calls it again. Cost: one store call.
//
// On a store that is not a Fencer (Cosmos DB) there is no fence to raise,
// and RaiseFence returns nil without a call: that is the protocol, not a
// failure. Such a store cannot refuse a stale router's write, so the
// changes that need every router to have moved on wait for their leases
// instead (WaitForRouters; docs/design.md, "Fencing"). A wrapper must not
// hide the capability, or fencing would silently stop: the project's one
// wrapper, store/retry, keeps every capability of the store it wraps (its
// tests check each), so st may be wrapped or not.
func RaiseFence(ctx context.Context, st store.Store, s *State) error {
	st = retry.Ensure(st)
	f, ok := st.(store.Fencer)
	if !ok {
		return nil
	}
	if _, err := f.RaiseFence(ctx, s.Database, s.Epoch); err != nil {
		return fmt.Errorf("shardstate: raising the fence of %s to epoch %d: %w", s.Database, s.Epoch, err)
	}
	return nil
}

// History returns the versions of a database's state its history keeps
// (the last HistoryKept before the current one), oldest first, the
// current one last (with its ETag). A broken history document is a
// *DocumentError naming it. Cost: one query over the history partition,
// paged, and a point read.
func History(ctx context.Context, st store.Store, dbLink string) ([]*State, error) {
	h, err := HistorySince(ctx, st, dbLink, 0)
	if err != nil {
		return nil, err
	}
	if _, err := h[len(h)-1].DecodeDocument(); err != nil {
		return nil, err // as Load reports it
	}
	return h, nil
}

// HistorySince is History from the version after the given one: every
// version above after, oldest first, the current one last (with its ETag;
// alone when after is the current version or above). The current version
// is read as Peek reads it: its resolver is not decoded (State.Decode, or
// DecodeDocument, does). Cost: as History, for the versions it returns.
func HistorySince(ctx context.Context, st store.Store, dbLink string, after int64) ([]*State, error) {
	st = retry.Ensure(st)
	cur, err := Peek(ctx, st, dbLink)
	if err != nil {
		return nil, err
	}
	if after >= cur.Version-1 {
		return []*State{cur}, nil
	}
	coll, _ := CollectionLink(cur.Database)
	var out []*State
	q := store.Query{Text: "SELECT * FROM c WHERE c.kind = @kind AND c.version > @after AND c.version < @v ORDER BY c.version",
		Parameters: []store.Param{{Name: "@kind", Value: kindHistory}, {Name: "@after", Value: after}, {Name: "@v", Value: cur.Version}}}
	opts := &store.QueryOptions{PartitionKey: kindHistory}
	for {
		page, err := st.Query(ctx, coll, q, opts)
		if err != nil {
			return nil, fmt.Errorf("shardstate: reading the history of %s: %w", cur.Database, err)
		}
		for _, item := range page.Items {
			s, err := parse(item, cur.Database, kindHistory, true)
			if err != nil {
				return nil, &DocumentError{Link: coll, ID: idOf(item), Err: err}
			}
			out = append(out, s)
		}
		if page.Continuation == "" {
			break
		}
		opts.Continuation = page.Continuation
	}
	return append(out, cur), nil
}

// idOf returns a stored document's id for an error message.
func idOf(body []byte) string {
	var d struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &d) != nil || d.ID == "" {
		return "(unreadable)"
	}
	return d.ID
}
