package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/proctest"
	"github.com/docshard/docshard/store"
)

const (
	killDirEnv   = "DIR"   // the child's store
	killRoundEnv = "ROUND" // and its round
	killLink     = "dbs/kill/colls/c"
	// The child's batches create killBatchSize documents each in
	// killBatchLink, keyed by /pk.
	killBatchLink = "dbs/kill/colls/batches"
	killBatchSize = 3
)

// TestDurableSurvivesSIGKILL runs this test binary again as a child that
// writes to a durable store as fast as it can (creates, deletes and
// upserts from 16 goroutines, batches of creates from 4 more, fsync on) and
// prints every write the store acknowledged; the parent kills it with
// SIGKILL at a random moment, reopens the directory and checks that it
// opens cleanly and holds every acknowledged write: created documents are
// there, deleted ones are gone, no counter went back below its last
// acknowledged value, and every batch is there whole (all the acknowledged
// ones) or not at all. In both collections the change feed, read from the
// position the previous round ended at, holds every write acknowledged in
// this round at its stored content, and read whole holds every document
// once, a batch's documents next to each other in the order the batch
// wrote them. Many rounds on the same directory (fewer with
// -short).
func TestDurableSurvivesSIGKILL(t *testing.T) {
	if proctest.IsChild(t) {
		killChild(os.Getenv(killDirEnv))
		return
	}
	dir := t.TempDir()
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	// id -> what was acknowledged last: a create, a delete, or a create
	// followed by a delete that may or may not have happened.
	const (
		present = iota + 1
		deleted
		maybe
	)
	created := map[string]int{}
	latest := map[string]int{}   // counter id -> highest acknowledged value
	batches := map[string]bool{} // batch prefix -> acknowledged
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	total := 0
	feedPos, batchFeedPos := "", "" // the change feeds' ends after the previous round
	for round := 0; round < rounds; round++ {
		p := proctest.Start(t, "TestDurableSurvivesSIGKILL", killDirEnv+"="+dir, killRoundEnv+"="+strconv.Itoa(round))
		ready := make(chan struct{})
		firstAck := make(chan struct{})
		done := make(chan struct{})
		acks := 0
		go func() {
			defer close(done)
			for line := range p.Lines {
				f := strings.Fields(line)
				switch {
				case len(f) == 1 && f[0] == "ready":
					close(ready)
				case len(f) == 2 && f[0] == "create":
					created[f[1]] = present
				case len(f) == 2 && f[0] == "deleting":
					created[f[1]] = maybe
				case len(f) == 2 && f[0] == "delete":
					created[f[1]] = deleted
				case len(f) == 2 && f[0] == "batch":
					batches[f[1]] = true
				case len(f) == 3 && f[0] == "upsert":
					if v, err := strconv.Atoi(f[2]); err == nil && v > latest[f[1]] {
						latest[f[1]] = v
					}
				default:
					continue
				}
				if acks++; acks == 1 {
					close(firstAck)
				}
			}
		}()
		// Kill at a random moment after the child has acknowledged a
		// write, so every round has something to lose.
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			p.Kill()
			t.Fatal("the child did not start")
		}
		select {
		case <-firstAck:
		case <-time.After(30 * time.Second):
			p.Kill()
			t.Fatal("the child acknowledged no write")
		}
		time.Sleep(time.Duration(10+rng.IntN(250)) * time.Millisecond)
		p.Kill() // SIGKILL
		<-done
		total += acks

		s, err := Open(dir, nil)
		require.NoError(t, err, "round %d: the store reopens after SIGKILL", round)
		for id, state := range created {
			d, err := s.Read(context.Background(), killLink, id, &store.ReadOptions{PartitionKey: id})
			if state == maybe {
				continue
			}
			if state == deleted {
				require.ErrorIs(t, err, store.ErrNotFound, "round %d: acknowledged delete of %s is lost", round, id)
				continue
			}
			require.NoError(t, err, "round %d: acknowledged create %s is lost", round, id)
			require.True(t, json.Valid(d.Body))
		}
		for id, v := range latest {
			d, err := s.Read(context.Background(), killLink, id, &store.ReadOptions{PartitionKey: id})
			require.NoError(t, err, "round %d: acknowledged upsert %s is lost", round, id)
			var m struct{ V int }
			require.NoError(t, json.Unmarshal(d.Body, &m))
			require.GreaterOrEqual(t, m.V, v, "round %d: %s went back from acknowledged %d to %d", round, id, v, m.V)
		}
		// The whole store reads back: feed, queries, usage agree. Every
		// batch is there whole or not at all, and every acknowledged one
		// is there.
		n, cont := 0, ""
		for {
			p, err := s.ReadFeed(context.Background(), killLink, &store.FeedOptions{PageSize: 1000, Continuation: cont})
			require.NoError(t, err)
			n += len(p.Items)
			if cont = p.Continuation; cont == "" {
				break
			}
		}
		inBatch := map[string]int{}
		for {
			p, err := s.ReadFeed(context.Background(), killBatchLink, &store.FeedOptions{PageSize: 1000, Continuation: cont})
			require.NoError(t, err)
			for _, it := range p.Items {
				var m struct{ PK string }
				require.NoError(t, json.Unmarshal(it, &m))
				inBatch[m.PK]++
			}
			if cont = p.Continuation; cont == "" {
				break
			}
		}
		for b, k := range inBatch {
			require.Equal(t, killBatchSize, k, "round %d: batch %s is stored in part", round, b)
		}
		for b := range batches {
			require.Contains(t, inBatch, b, "round %d: acknowledged batch %s is lost", round, b)
		}
		info, err := s.CollectionInfo(context.Background(), killLink)
		require.NoError(t, err)
		require.EqualValues(t, n, info.Documents)
		q, err := s.Query(context.Background(), killLink, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(n), string(q.Items[0]))
		// The change feeds, read from where the previous round's ended,
		// hold every write acknowledged in this round, each at its stored
		// content, and read whole hold every document once.
		changesOf := func(l, from string) (map[string]json.RawMessage, string) {
			_, changed, end := changesSince(t, s, l, from, 1000)
			for id, body := range changed {
				d, err := s.Read(context.Background(), l, id, nil)
				require.NoError(t, err, "round %d: the change feed of %s holds %s, which is not stored", round, l, id)
				require.JSONEq(t, string(d.Body), string(body), "round %d: the change feed holds %s at its stored content", round, id)
			}
			return changed, end
		}
		_, whole, _ := changesSince(t, s, killLink, "", 1000)
		require.Len(t, whole, n, "round %d: the change feed holds every document once", round)
		var changed map[string]json.RawMessage
		changed, feedPos = changesOf(killLink, feedPos)
		prefix := fmt.Sprintf("r%d-", round)
		for id, state := range created {
			if state == present && strings.HasPrefix(id, prefix) {
				require.Contains(t, changed, id, "round %d: the change feed misses the acknowledged create of %s", round, id)
			}
		}
		for id, v := range latest {
			if v > 1_000_000*round {
				require.Contains(t, changed, id, "round %d: the change feed misses the acknowledged upserts of %s", round, id)
			}
		}
		batchIDs, _, _ := changesSince(t, s, killBatchLink, "", 1000)
		require.Len(t, batchIDs, killBatchSize*len(inBatch), "round %d: the change feed holds every batch's documents once", round)
		for i := 0; i < len(batchIDs); i += killBatchSize {
			b := batchIDs[i][:strings.LastIndexByte(batchIDs[i], '-')]
			for j := range killBatchSize {
				require.Equal(t, fmt.Sprintf("%s-%d", b, j), batchIDs[i+j], "round %d: the change feed holds batch %s's documents together, in order", round, b)
			}
		}
		changed, batchFeedPos = changesOf(killBatchLink, batchFeedPos)
		prefix = fmt.Sprintf("b%d-", round)
		for b := range batches {
			for j := 0; j < killBatchSize && strings.HasPrefix(b, prefix); j++ {
				require.Contains(t, changed, fmt.Sprintf("%s-%d", b, j), "round %d: the change feed misses acknowledged batch %s", round, b)
			}
		}
		require.NoError(t, s.Close())
		t.Logf("round %d: %d writes acknowledged, %d documents stored (%d whole batches), all acknowledged writes present", round, acks, n, len(inBatch))
	}
	require.GreaterOrEqual(t, total, rounds, "every round acknowledged writes before the kill")
}

// killChild writes until it is killed.
func killChild(dir string) {
	s, err := Open(dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	for l, spec := range map[string]*store.CollectionSpec{killLink: nil, killBatchLink: {PartitionKeyPath: "/pk"}} {
		if err := s.CreateCollection(ctx, l, spec); err != nil && !errors.Is(err, store.ErrConflict) {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
	}
	round, _ := strconv.Atoi(os.Getenv(killRoundEnv))
	proctest.Say("ready")
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Go(func() {
			counter := fmt.Sprintf("counter-%d", g)
			for i := 0; ; i++ {
				id := fmt.Sprintf("r%d-g%d-%d", round, g, i)
				body := fmt.Sprintf(`{"id":%q,"payload":%q}`, id, strings.Repeat("x", 200+i%800))
				if _, err := s.Create(ctx, killLink, []byte(body), nil); err == nil {
					proctest.Say("create %s", id)
					if i%5 == 4 {
						proctest.Say("deleting %s", id)
						if err := s.Delete(ctx, killLink, id, &store.WriteOptions{PartitionKey: id}); err == nil {
							proctest.Say("delete %s", id)
						}
					}
				}
				v := 1_000_000*round + i + 1
				if _, err := s.Upsert(ctx, killLink, []byte(fmt.Sprintf(`{"id":%q,"v":%d}`, counter, v)), nil); err == nil {
					proctest.Say("upsert %s %d", counter, v)
				}
			}
		})
	}
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			for i := 0; ; i++ {
				prefix := fmt.Sprintf("b%d-g%d-%d", round, g, i)
				ops := make([]store.BatchOp, killBatchSize)
				for j := range ops {
					ops[j] = store.BatchOp{Kind: store.BatchCreate, Doc: fmt.Appendf(nil, `{"id":"%s-%d","pk":%q,"payload":%q}`, prefix, j, prefix, strings.Repeat("y", 300))}
				}
				if _, err := s.ExecuteBatch(ctx, killBatchLink, prefix, ops, nil); err == nil {
					proctest.Say("batch %s", prefix)
				}
			}
		})
	}
	wg.Wait()
}
