package transition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/shardstate"
)

// work is a reshard's progress: what its runs have done so far. It is saved
// in the database's progress document (shardstate.SaveProgress), not in the
// state's phase, so saving it (every CheckpointEvery documents, every
// catch-up round, every heartbeat) is no version of the state: the state's
// versions are the changes routers must see, each with its reason.
type work struct {
	Feeds map[string]string `json:"feeds"` // source → catch-up position
	Copy  map[string]string `json:"copy"`  // source → read-feed continuation; "done" when finished
	// Settled records, after the switch, that every router has
	// acknowledged it or let its lease lapse: no router reads by the
	// current placement any more, so the clean-up may delete sources. A
	// resumed reshard that finds it unset waits for the routers first.
	Settled bool `json:"settled,omitempty"`
}

// legacy reports whether rec was written by a release that kept the
// reshard's progress in the phase (before 2026-11-28).
func (rec *record) legacy() bool { return rec.Feeds != nil || rec.Copy != nil }

// saveLocked saves the reshard's progress (m.work, and m.runner as its
// owner) over m.pdoc by compare-and-swap; m.mu is held. A document another
// run saved meanwhile means that run owns the reshard now: ErrTakenOver.
// Cost: one conditional write (and a read after a conflict).
func (m *manager) saveLocked(ctx context.Context) error {
	body, err := json.Marshal(m.work)
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		p, err := shardstate.SaveProgress(ctx, m.st, m.db, m.pdoc, shardstate.Progress{Change: m.rec.ID, Owner: m.runner, Body: body, UpdatedBy: m.o.By})
		var ce *shardstate.ProgressConflictError
		switch {
		case err == nil:
			m.pdoc = p
			return nil
		case errors.As(err, &ce) && ce.Current != nil && ce.Current.Change == m.rec.ID && ce.Current.Owner != m.runner:
			return fmt.Errorf("%w: %s runs it now", ErrTakenOver, ce.Current.Owner)
		case errors.As(err, &ce) && ce.Current != nil && ce.Current.Change == m.rec.ID && try == 0:
			m.pdoc = ce.Current // this run's own, saved by a call whose answer was lost
		case errors.As(err, &ce):
			return fmt.Errorf("transition: the progress of %s's reshard changed under it (aborted, or finished by another process?): %w", m.db, err)
		default:
			return err
		}
	}
}

// runnerOf reads the owner of reshard rec: from its progress document, or
// from the phase of a reshard an earlier release recorded; known is false
// when neither says (no progress saved yet: the run that started it may
// still be about to). seq is the document's, 0 without one. Cost: a read.
func (m *manager) runnerOf(ctx context.Context, rec *record) (seq int64, owner string, known bool, err error) {
	p, err := shardstate.LoadProgress(ctx, m.st, m.db)
	switch {
	case err == nil && p.Change == rec.ID:
		return p.Seq, p.Owner, true, nil
	case err != nil && !errors.Is(err, shardstate.ErrNoProgress):
		return 0, "", false, err
	case rec.legacy():
		return 0, rec.Owner, true, nil
	}
	return 0, "", false, nil
}

// loadWork finds reshard rec's progress: its progress document; for a
// reshard an earlier release recorded, the phase's (the next save moves it
// to the document, and the next version's phase leaves it out); when
// neither is there (the run that started it stopped before saving any, or
// the document was lost), positions taken anew: every source copied again
// from its start and caught up from now. That loses nothing: the copy reads
// every document as it is now, and a resume checks every copy against its
// source first. Cost: a read; anew, a change-feed position per source.
func (m *manager) loadWork(ctx context.Context, rec *record) error {
	p, err := shardstate.LoadProgress(ctx, m.st, m.db)
	switch {
	case err == nil && p.Change == rec.ID:
		var w work
		if err := json.Unmarshal(p.Body, &w); err != nil {
			return fmt.Errorf("transition: the progress document of %s's reshard %s: %w", m.db, rec.ID, err)
		}
		m.work, m.pdoc, m.runner = w, p, p.Owner
	case err != nil && !errors.Is(err, shardstate.ErrNoProgress):
		return err
	case rec.legacy():
		m.pdoc = p // nil, or another change's: replaced at the next save
		m.work, m.runner = work{Feeds: rec.Feeds, Copy: rec.Copy, Settled: rec.Settled}, rec.Owner
		m.log.Info("reshard recorded by an earlier release: its progress moves to the progress document", "db", m.db, "id", rec.ID, "step", rec.Step)
	default:
		m.pdoc, m.runner = p, ""
		m.work = work{Feeds: map[string]string{}, Copy: map[string]string{}}
		if rec.Step != StepSwitched {
			m.log.Warn("reshard progress not found: copying again from the start", "db", m.db, "id", rec.ID, "step", rec.Step)
			if err := m.positions(ctx); err != nil {
				return err
			}
		}
	}
	if m.work.Feeds == nil {
		m.work.Feeds = map[string]string{}
	}
	if m.work.Copy == nil {
		m.work.Copy = map[string]string{}
	}
	// The phase keeps what routers and readers of the history need.
	rec.Feeds, rec.Copy, rec.Owner, rec.Settled = nil, nil, "", false
	return nil
}

// positions sets the work to copy every source from its start and catch
// it up from now. Cost: a change-feed position per source.
func (m *manager) positions(ctx context.Context) error {
	sources, err := m.from.ResolveForRead(nil)
	if err != nil {
		return err
	}
	for _, s := range sources {
		pos, err := m.position(ctx, s)
		if err != nil {
			return err
		}
		m.work.Feeds[s], m.work.Copy[s] = pos, ""
	}
	return nil
}

// forget removes the progress document of a reshard that ended. Best
// effort: a document left behind names a change that is over, and the next
// reshard replaces it.
func (m *manager) forget(ctx context.Context) {
	if m.pdoc != nil {
		if err := shardstate.DeleteProgress(ctx, m.st, m.pdoc); err != nil {
			m.log.Warn("reshard: removing its progress document", "db", m.db, "error", err)
		}
		m.pdoc = nil
	}
}

// about names the reshard in its versions' reasons: "reshard 3 → 4
// collections".
func (m *manager) about() string {
	return fmt.Sprintf("reshard %s → %s", count(m.from, false), count(m.to, true))
}

// count is how many collections r reads ("3", or "3 collections" with
// unit).
func count(r resolver.Resolver, unit bool) string {
	links, err := r.ResolveForRead(nil)
	n := fmt.Sprint(len(links))
	if err != nil {
		n = "?"
	}
	switch {
	case !unit:
		return n
	case len(links) == 1:
		return n + " collection"
	}
	return n + " collections"
}
