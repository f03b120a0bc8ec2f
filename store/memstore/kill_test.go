package memstore

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

const (
	killChildEnv = "DOCSHARD_MEMSTORE_KILL_CHILD"
	killLink     = "dbs/kill/colls/c"
)

// TestDurableSurvivesSIGKILL runs this test binary again as a child that
// writes to a durable store as fast as it can and prints every write the
// store acknowledged; the parent kills it with SIGKILL at a random moment,
// reopens the directory, and checks that every acknowledged write is there.
// Many rounds, on the same directory.
func TestDurableSurvivesSIGKILL(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		killChild(dir)
		return
	}
	dir := t.TempDir()
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	created := map[string]bool{}
	latest := map[string]int{} // counter document -> highest acknowledged value
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDurableSurvivesSIGKILL$", "-test.count=1")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir, "DOCSHARD_KILL_ROUND="+strconv.Itoa(round))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		ready := make(chan struct{})
		var mu sync.Mutex
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				mu.Lock()
				switch {
				case len(f) == 1 && f[0] == "ready":
					close(ready)
				case len(f) == 2 && f[0] == "create":
					created[f[1]] = true
				case len(f) == 3 && f[0] == "upsert":
					if v, err := strconv.Atoi(f[2]); err == nil && v > latest[f[1]] {
						latest[f[1]] = v
					}
				}
				mu.Unlock()
			}
		}()
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("the child did not start")
		}
		time.Sleep(time.Duration(20+rng.IntN(250)) * time.Millisecond)
		require.NoError(t, cmd.Process.Kill()) // SIGKILL
		<-done
		_ = cmd.Wait()

		mu.Lock()
		s, err := Open(dir, nil)
		require.NoError(t, err, "round %d: the store reopens after SIGKILL", round)
		for id := range created {
			d, err := s.Read(context.Background(), killLink, id, &store.ReadOptions{PartitionKey: id})
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
		require.NoError(t, s.Close())
		t.Logf("round %d: %d creates and %d counters acknowledged so far, all present", round, len(created), len(latest))
		mu.Unlock()
	}
	require.NotEmpty(t, created, "the child acknowledged writes")
}

// killChild writes until it is killed.
func killChild(dir string) {
	s, err := Open(dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	if err := s.CreateCollection(ctx, killLink, &store.CollectionSpec{PartitionKeyPath: "/id"}); err != nil && !errors.Is(err, store.ErrConflict) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	round := os.Getenv("DOCSHARD_KILL_ROUND")
	fmt.Println("ready")
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counter := fmt.Sprintf("counter-%d", g)
			for i := 0; ; i++ {
				id := fmt.Sprintf("r%s-g%d-%d", round, g, i)
				body := fmt.Sprintf(`{"id":%q,"payload":%q}`, id, strings.Repeat("x", 200+i%800))
				if _, err := s.Create(ctx, killLink, []byte(body), nil); err == nil {
					fmt.Printf("create %s\n", id)
				}
				v := 1000000*atoiOr(round) + i + 1
				if _, err := s.Upsert(ctx, killLink, []byte(fmt.Sprintf(`{"id":%q,"v":%d}`, counter, v)), nil); err == nil {
					fmt.Printf("upsert %s %d\n", counter, v)
				}
			}
		}()
	}
	wg.Wait()
}

func atoiOr(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
