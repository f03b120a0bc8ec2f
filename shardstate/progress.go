package shardstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
)

// The id and kind of a database's progress document.
const (
	progressID   = "progress"
	kindProgress = "progress"
)

// ErrNoProgress: the database has no progress document (no long-running
// change saved any, or the last one removed it).
var ErrNoProgress = errors.New("shardstate: the database has no progress document")

// Progress is the working record of a long-running change (a reshard's copy
// and catch-up positions, which process runs it, its heartbeat), kept in a
// document of its own beside the state (id and kind "progress" in the state
// collection), so that saving it is not a version of the state: the state's
// versions are the changes routers must see, and the history stays a few
// versions a reader can follow. A database has at most one; it belongs to
// the change that Change names (the id the change records in the state's
// phase), and a change ignores one that names another. Like the state, it
// is replaced by compare-and-swap (SaveProgress). A Progress is a value.
type Progress struct {
	// Database is the database link, "dbs/{db}".
	Database string
	// Change is the id of the change it belongs to.
	Change string
	// Owner names the process running the change; empty when none does
	// (it stopped, and released it).
	Owner string
	// Body is the change's own record, as JSON.
	Body json.RawMessage
	// Seq grows by one per save (the first is 1): a waiter that sees it
	// unchanged for a while knows the owner wrote nothing meanwhile.
	Seq int64
	// UpdatedBy and UpdatedAt say who saved it and when (the writer's
	// clock).
	UpdatedBy string
	UpdatedAt time.Time
	// ETag is the document's ETag when read or saved: the compare-and-swap
	// token of the next save.
	ETag string
}

// progressDocument is the stored form of a Progress.
type progressDocument struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Format    string          `json:"format"`
	Database  string          `json:"database"`
	Change    string          `json:"change"`
	Owner     string          `json:"owner,omitempty"`
	Body      json.RawMessage `json:"body"`
	Seq       int64           `json:"seq"`
	UpdatedBy string          `json:"updatedBy"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// ProgressConflictError reports a SaveProgress that lost its
// compare-and-swap: Current is the document now stored, nil when there is
// none (it was removed) or it could not be read. It wraps ErrConflict.
type ProgressConflictError struct {
	Database string
	Current  *Progress
}

// Error implements error.
func (e *ProgressConflictError) Error() string {
	if e.Current == nil {
		return fmt.Sprintf("shardstate: %s: the progress document changed meanwhile (it is gone)", e.Database)
	}
	return fmt.Sprintf("shardstate: %s: the progress document changed meanwhile; it is now change %s's, run by %q (saved by %s at %s)",
		e.Database, e.Current.Change, e.Current.Owner, e.Current.UpdatedBy, e.Current.UpdatedAt.Format(time.RFC3339))
}

// Unwrap returns ErrConflict.
func (e *ProgressConflictError) Unwrap() error { return ErrConflict }

// LoadProgress reads a database's progress document. It fails with an
// error wrapping ErrNoProgress when there is none, and a *DocumentError
// (wrapping ErrInvalidState) when it is broken or foreign. Cost: one point
// read.
func LoadProgress(ctx context.Context, st store.Store, dbLink string) (*Progress, error) {
	st = retry.Ensure(st)
	db, coll, err := names(dbLink)
	if err != nil {
		return nil, err
	}
	d, err := st.Read(ctx, coll, progressID, &store.ReadOptions{PartitionKey: kindProgress})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoProgress, db)
	}
	if err != nil {
		return nil, fmt.Errorf("shardstate: reading the progress of %s: %w", db, err)
	}
	var pd progressDocument
	switch err := json.Unmarshal(d.Body, &pd); {
	case err != nil:
		return nil, &DocumentError{Link: coll, ID: progressID, Err: fmt.Errorf("not a progress document: %w", err)}
	case pd.Format != Format:
		return nil, &DocumentError{Link: coll, ID: progressID, Err: fmt.Errorf("format %q, want %q", pd.Format, Format)}
	case pd.Kind != kindProgress:
		return nil, &DocumentError{Link: coll, ID: progressID, Err: fmt.Errorf("kind %q, want %q", pd.Kind, kindProgress)}
	case pd.Database != db:
		return nil, &DocumentError{Link: coll, ID: progressID, Err: fmt.Errorf("database %q, want %q: the document belongs to another database", pd.Database, db)}
	case pd.Change == "" || pd.Seq < 1:
		return nil, &DocumentError{Link: coll, ID: progressID, Err: fmt.Errorf("change %q, seq %d: no change, or no save", pd.Change, pd.Seq)}
	}
	return &Progress{Database: db, Change: pd.Change, Owner: pd.Owner, Body: pd.Body, Seq: pd.Seq,
		UpdatedBy: pd.UpdatedBy, UpdatedAt: pd.UpdatedAt, ETag: d.ETag}, nil
}

// SaveProgress saves next (its Change, Owner and Body; By in UpdatedBy, or
// the process's "host/pid") as a database's progress document, by
// compare-and-swap: over prev (as LoadProgress or SaveProgress returned
// it), or, when prev is nil, as a new document. When the document is not
// prev any more (another process saved or removed it; or, with a nil prev,
// one exists), nothing is written and the error is a
// *ProgressConflictError carrying the document that won. A save whose
// answer was lost and that took effect is recognised as this one. It
// returns the saved document, with its ETag. Cost: one create or
// conditional replace; a point read after a conflict or a lost answer.
func SaveProgress(ctx context.Context, st store.Store, dbLink string, prev *Progress, next Progress) (*Progress, error) {
	st = retry.Ensure(st)
	db, coll, err := names(dbLink)
	if err != nil {
		return nil, err
	}
	if len(next.Body) == 0 || !json.Valid(next.Body) {
		return nil, errors.New("shardstate: Progress.Body is not valid JSON")
	}
	if next.Change == "" {
		return nil, errors.New("shardstate: Progress.Change names no change")
	}
	next.Database, next.Seq, next.UpdatedBy, next.UpdatedAt, next.ETag = db, 1, by(next.UpdatedBy), now(), ""
	if prev != nil {
		next.Seq = prev.Seq + 1
	}
	body, err := json.Marshal(progressDocument{ID: progressID, Kind: kindProgress, Format: Format, Database: db, Change: next.Change,
		Owner: next.Owner, Body: next.Body, Seq: next.Seq, UpdatedBy: next.UpdatedBy, UpdatedAt: next.UpdatedAt})
	if err != nil {
		return nil, fmt.Errorf("shardstate: encoding the progress of %s: %w", db, err)
	}
	var d *store.Document
	if prev == nil {
		// Repeatable: a second attempt's conflict may be the first's
		// create, recognised below.
		d, err = st.Create(retry.Repeatable(ctx), coll, body, &store.WriteOptions{PartitionKey: kindProgress})
	} else {
		d, err = st.Replace(ctx, coll, progressID, body, &store.WriteOptions{PartitionKey: kindProgress, IfMatch: prev.ETag})
	}
	if err == nil {
		next.ETag = d.ETag
		return &next, nil
	}
	if !retry.OutcomeUnknown(err) && !errors.Is(err, store.ErrPreconditionFailed) && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("shardstate: saving the progress of %s: %w", db, err)
	}
	cur, lerr := LoadProgress(ctx, st, db)
	switch {
	case lerr == nil && cur.Change == next.Change && cur.Seq == next.Seq && cur.UpdatedBy == next.UpdatedBy && cur.UpdatedAt.Equal(next.UpdatedAt):
		return cur, nil // this save, its answer lost
	case lerr == nil:
		return nil, &ProgressConflictError{Database: db, Current: cur}
	case errors.Is(lerr, ErrNoProgress) && (prev != nil || errors.Is(err, store.ErrConflict)):
		return nil, &ProgressConflictError{Database: db}
	default:
		return nil, fmt.Errorf("shardstate: saving the progress of %s: %w", db, err)
	}
}

// DeleteProgress removes a database's progress document if it is still p
// (If-Match its ETag); one that is gone or changed meanwhile is left as it
// is, and that is not an error. Cost: one conditional delete.
func DeleteProgress(ctx context.Context, st store.Store, p *Progress) error {
	st = retry.Ensure(st)
	_, coll, err := names(p.Database)
	if err != nil {
		return err
	}
	err = st.Delete(ctx, coll, progressID, &store.WriteOptions{PartitionKey: kindProgress, IfMatch: p.ETag})
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrPreconditionFailed) {
		return fmt.Errorf("shardstate: removing the progress of %s: %w", p.Database, err)
	}
	return nil
}
