package transition_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/transition"
)

// TestReshardHistoryIsShort: a full reshard, 3 -> 4 collections under
// writers, adds five versions to the state's history, the changes routers
// must see: the transition published (copying), the moving keys frozen for
// the cutover, the switch, the thaw once every router saw it, and the next
// resolver alone (done). Its progress (copy positions, catch-up positions,
// the owner's heartbeat) is not a version.
func TestReshardHistoryIsShort(t *testing.T) {
	ctx := context.Background()
	st, c, l := seeded(t, ring(t, 3), 3000)
	before, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	stop := make(chan struct{})
	var failed atomic.Int64
	wg := writers(t, c, l, 0, 2, stop, &failed)
	_, err = transition.Reshard(ctx, st, db, ring(t, 4), &transition.ReshardOptions{
		CheckpointEvery: 100, // many checkpoints: none of them is a version
		OwnerTTL:        time.Second,
		CutoverCap:      time.Minute, // one cutover on a busy host
		Routers:         &shardstate.WaitOptions{Poll: 10 * time.Millisecond},
	})
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	assert.Zero(t, failed.Load())
	checkPlaced(t, st, ring(t, 4), l)

	h, err := shardstate.History(ctx, st, db)
	require.NoError(t, err)
	added := h[before.Version:]
	reasons := make([]string, len(added))
	for i, s := range added {
		reasons[i] = s.Reason
	}
	assert.Equal(t, []string{
		"reshard 3 → 4 collections: started; copying the moving documents",
		"reshard 3 → 4 collections: writes to moving keys frozen for the cutover",
		"reshard 3 → 4 collections: switched reads and writes to the 4 collections (moving keys frozen until every router has seen it)",
		"reshard 3 → 4 collections: every router saw the switch; moving keys thawed, removing the moved documents from their sources",
		"reshard 3 → 4 collections done: the moved documents removed from their sources",
	}, reasons, "the versions the reshard added, each with its reason")
	_, err = shardstate.LoadProgress(ctx, st, db)
	assert.ErrorIs(t, err, shardstate.ErrNoProgress, "the finished reshard's progress is removed")
}

// TestReshardResumesLegacyProgress: a reshard recorded by a release before
// 2026-11-28, which kept its progress (copy and catch-up positions, owner)
// in the state's phase and has no progress document, is resumed: its
// owner, dead, is waited out for the owner TTL, its positions move to the
// progress document, the phase the resume publishes leaves them out, and
// the reshard finishes with every document once where it belongs.
func TestReshardResumesLegacyProgress(t *testing.T) {
	ctx := context.Background()
	st, _, l := seeded(t, ring(t, 2), 600)
	stopped := errors.New("stopped")
	_, err := transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{CheckpointEvery: 50,
		Step: func(s string) error {
			if s == "copied" {
				return stopped
			}
			return nil
		}})
	require.ErrorIs(t, err, stopped)

	// The state as the earlier release left it: the progress in the phase,
	// owned by a process that died; no progress document.
	cur, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	p, err := shardstate.LoadProgress(ctx, st, db)
	require.NoError(t, err)
	var phase struct {
		Reshard  map[string]any `json:"reshard"`
		Progress string         `json:"reshardProgress"`
	}
	require.NoError(t, json.Unmarshal(cur.Phase, &phase))
	assert.Contains(t, phase.Progress, "progress document", "an earlier release refuses the phase (a member it does not know)")
	var w map[string]any
	require.NoError(t, json.Unmarshal(p.Body, &w))
	rec := phase.Reshard
	require.NotContains(t, rec, "feeds", "this release keeps the progress out of the phase")
	rec["feeds"], rec["copy"], rec["owner"] = w["feeds"], w["copy"], "old-host/42/dead"
	legacy, err := json.Marshal(map[string]any{"reshard": rec})
	require.NoError(t, err)
	cur, err = shardstate.Publish(ctx, st, cur, shardstate.Change{Phase: legacy, By: "old-host/42"})
	require.NoError(t, err)
	require.NoError(t, shardstate.DeleteProgress(ctx, st, p))

	var during *shardstate.State
	var saved *shardstate.Progress
	_, err = transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{OwnerTTL: 300 * time.Millisecond,
		Step: func(s string) error {
			if s == "copied" {
				during, _ = shardstate.Load(ctx, st, db)
				saved, _ = shardstate.LoadProgress(ctx, st, db)
			}
			return nil
		}})
	require.NoError(t, err)
	require.NotNil(t, during)
	assert.NotContains(t, string(during.Phase), `"feeds"`, "the resume's phase leaves the progress out")
	assert.NotContains(t, string(during.Phase), "old-host/42/dead")
	require.NotNil(t, saved, "the progress moved to its document")
	assert.Equal(t, rec["id"], saved.Change)
	assert.Contains(t, string(saved.Body), `"copy"`)
	settled(t, st, ring(t, 3))
	checkPlaced(t, st, ring(t, 3), l)
	h, err := shardstate.History(ctx, st, db)
	require.NoError(t, err)
	assert.Contains(t, h[cur.Version].Reason, "reshard 2 → 3 collections: resumed by ", "the takeover is a version with its reason")
}
