package transition_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/internal/proctest"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/transition"
)

// The accounts test (issue 30, "outgrowing one machine, online"): a team
// that runs on docshard serve moves its database, under live traffic,
// into collections that live in other accounts (the cosmos backend's
// Options.Accounts), as docs/migrating.md tells it to:
//
//  1. services on docshard serve alone (a process of its own, durable in a
//     directory): the database on a ring of 2 collections, seeded, its
//     fence raised by an earlier change;
//  2. the services restarted with the accounts: the state and the source
//     collections stay in the default account (serve), the 4 collections
//     of the next ring are bound to two other accounts;
//  3. a reshard into the next ring while a writer (this process) writes,
//     a reader (this process) checks every answer as the exactness test
//     does, and two more routers in processes of their own read the
//     fixed documents, all following the shared state;
//  4. the old collections retired (deleted).
//
// The other accounts are two more docshard serve processes (which fence,
// so the reshard runs as on the embedded store), or two servers in this
// process whose store offers no fence, standing for Cosmos DB: there the
// cosmos backend is no store.Fencer, and the reshard waits for the
// routers' leases at every new epoch instead.

// accounts is a service's store configuration once the accounts are
// added: the default account's endpoint and the collections bound to
// others.
type accounts struct {
	def   string
	bound map[string]string // collection link -> endpoint
}

// accountsEnv passes accounts to a child process.
const accountsEnv = "DOCSHARD_TEST_ACCOUNTS"

// env is the child's environment entry: "ENDPOINT;LINK=ENDPOINT;...".
func (a accounts) env() string {
	parts := []string{a.def}
	for l, ep := range a.bound {
		parts = append(parts, l+"="+ep)
	}
	sort.Strings(parts[1:])
	return accountsEnv + "=" + strings.Join(parts, ";")
}

func accountsFromEnv() (accounts, error) {
	parts := strings.Split(os.Getenv(accountsEnv), ";")
	if parts[0] == "" {
		return accounts{}, fmt.Errorf("%s is not set: the parent passes it", accountsEnv)
	}
	a := accounts{def: parts[0], bound: map[string]string{}}
	for _, p := range parts[1:] {
		l, ep, ok := strings.Cut(p, "=")
		if !ok {
			return accounts{}, fmt.Errorf("%s: %q is not LINK=ENDPOINT", accountsEnv, p)
		}
		a.bound[l] = ep
	}
	return a, nil
}

// open is what each service opens: the cosmos backend over every account.
func (a accounts) open(ctx context.Context) (store.Store, error) {
	o := &cosmos.Options{Account: cosmos.Account{Endpoint: a.def}, Accounts: map[string]cosmos.Account{}}
	for l, ep := range a.bound {
		o.Accounts[l] = cosmos.Account{Endpoint: ep}
	}
	return cosmos.Open(ctx, o)
}

// unfenced is the embedded store without its fence: docshard serve over
// it does not offer the extension, as Cosmos DB has none.
type unfenced struct {
	store.Store
	store.ChangeFeeder
	store.Batcher
	store.Replacer
}

func newUnfenced(t *testing.T) *unfenced {
	m := memstore.New(nil)
	t.Cleanup(func() { _ = m.Close() })
	return &unfenced{Store: m, ChangeFeeder: m, Batcher: m, Replacer: m}
}

// fixedDoc is the i-th of the reader's documents, as the exactness test
// writes them.
func fixedDoc(i int) doc {
	return doc{ID: fmt.Sprintf("%s%06d", fixedPrefix, i), UserID: fmt.Sprintf("u%d", i%500), V: 1}
}

// TestAccountsReaderChild is a router in a process of its own: it follows
// dbs/app over the accounts its parent passes and reads the $FIXED fixed
// documents (a point read every 20 ms, a COUNT of them every tenth) until
// stdin closes; it says "wrong ..." for each wrong answer and then
// "done READS REFUSED". It is skipped unless TestReshardIntoOtherAccounts
// runs it.
func TestAccountsReaderChild(t *testing.T) {
	proctest.Child(t)
	ctx := context.Background()
	say := proctest.Say
	a, err := accountsFromEnv()
	if err != nil {
		say("fatal %v", err)
		return
	}
	st, err := a.open(ctx)
	if err != nil {
		say("fatal %v", err)
		return
	}
	n, _ := strconv.Atoi(os.Getenv("FIXED"))
	c, f, done, ok := childRouter(ctx, st, nil, say) // a service's defaults
	if !ok {
		return
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 30))
	reads, refused := 0, 0
	for i := 0; ; i++ {
		select {
		case <-done:
			say("done %d %d", reads, refused)
			return
		case <-time.After(20 * time.Millisecond):
		}
		reads++
		if i%10 == 9 {
			rows, err := c.Query(ctx, db, store.Query{Text: countFixed}, nil)
			switch {
			case err != nil:
				refused++
			case len(rows) != 1 || string(rows[0]) != strconv.Itoa(n):
				say("wrong the count of the fixed documents answered %s, want %d (version %d)", rows, n, f.Version())
			}
			continue
		}
		d := fixedDoc(rng.IntN(n))
		got, err := c.Read(ctx, db, d.ID, d.UserID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			say("wrong %s (key %s) answered NotFound (version %d)", d.ID, d.UserID, f.Version())
		case err != nil:
			refused++
		case !strings.Contains(string(got.Body), fmt.Sprintf(`"id":%q`, d.ID)):
			say("wrong %s answered %s", d.ID, got.Body)
		}
	}
}

// TestReshardIntoOtherAccounts: see above.
func TestReshardIntoOtherAccounts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs docshard serve processes and routers in processes across a reshard")
	}
	for _, tc := range []struct {
		name   string
		fenced bool
	}{
		{"targets on docshard serve", true},
		{"targets without a fence, as Cosmos DB", false},
	} {
		t.Run(tc.name, func(t *testing.T) { reshardIntoAccounts(t, tc.fenced) })
	}
}

func reshardIntoAccounts(t *testing.T, fenced bool) {
	const nFixed = 400
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	first := proctest.StartServe(t, t.TempDir())
	var second, third string
	if fenced {
		second, third = proctest.StartServe(t, t.TempDir()).Endpoint, proctest.StartServe(t, t.TempDir()).Endpoint
	} else {
		second = emulatortest.Start(t, &emulatortest.Options{Store: newUnfenced(t)}).Endpoint
		third = emulatortest.Start(t, &emulatortest.Options{Store: newUnfenced(t)}).Endpoint
	}

	// 1. On docshard serve alone.
	solo, err := cosmos.Open(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: first.Endpoint}})
	require.NoError(t, err)
	require.Implements(t, (*store.Fencer)(nil), solo)
	sc, sf := followEnsured(ctx, t, solo, &router.FollowOptions{Seed: ring(t, 2)})
	m := newModel()
	fixed := make([]doc, nFixed)
	for i := range fixed {
		fixed[i] = fixedDoc(i)
		_, err := sc.Create(ctx, db, fixed[i], nil)
		require.NoError(t, err)
		m.set(fixed[i].ID, fixed[i].UserID, 1)
	}
	cur, err := shardstate.Load(ctx, solo, db)
	require.NoError(t, err)
	_, err = shardstate.Publish(ctx, solo, cur, shardstate.Change{NewEpoch: true, By: "an earlier change"})
	require.NoError(t, err)
	fence, err := solo.(store.Fencer).Fence(ctx, db)
	require.NoError(t, err)
	require.Positive(t, fence, "serve's fence was raised")
	require.NoError(t, sf.Close())
	require.NoError(t, solo.Close())

	// 2. The accounts added: every service restarts with them.
	links := make([]string, 4)
	acc := accounts{def: first.Endpoint, bound: map[string]string{}}
	for i := range links {
		links[i] = fmt.Sprintf("dbs/app/colls/cosmos%d", i)
		acc.bound[links[i]] = []string{second, third}[i/2]
	}
	next, err := hashring.New(links, &hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	require.NoError(t, err)
	open := func() store.Store {
		st, err := acc.open(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		_, isFencer := st.(store.Fencer)
		require.Equal(t, fenced, isFencer, "the store fences only when every account does")
		return st
	}
	wst := open()
	wc := router.New(wst, nil)
	wf, err := wc.Follow(ctx, db, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = wf.Close() })
	rd := newReader(ctx, t, open(), fixed, m, exactConfig{pageSize: 100, pointRead: 4})
	var children []*proctest.Proc
	for range 2 {
		p := proctest.Start(t, "TestAccountsReaderChild", acc.env(), "FIXED="+strconv.Itoa(nFixed))
		children = append(children, p)
		line := <-p.Lines
		require.True(t, strings.HasPrefix(line, "following "), line)
	}
	childWrong := make([][]string, len(children))
	var childDone sync.WaitGroup
	for i, p := range children {
		childDone.Go(func() {
			for line := range p.Lines {
				if strings.HasPrefix(line, "wrong ") || strings.HasPrefix(line, "fatal ") {
					childWrong[i] = append(childWrong[i], line)
				}
				if strings.HasPrefix(line, "done ") {
					t.Logf("reader process %d: %s (reads, refused)", i, line)
				}
			}
		})
	}

	stopWorkers := startWorkers(ctx, t, wc, rand.New(rand.NewPCG(30, 4)), 10*time.Millisecond, m, rd)

	// 3. The reshard, paced by the writer and the reader (no serve restart
	// here; an evictor of one query per page).
	rst := open()
	ev := newEvictor(ctx, t, rst, 1)
	p := &pacer{ev: ev, m: m, rd: rd}
	prog, err := transition.Reshard(ctx, rst, db, next, &transition.ReshardOptions{
		Routers:  &shardstate.WaitOptions{Poll: 50 * time.Millisecond},
		Progress: p.page,
		Step:     p.step,
	})
	require.NoError(t, err)
	require.NoError(t, p.err())
	t.Logf("reshard into the accounts: scanned %d, copied %d, caught up %d, deleted %d; %d walk pages paced",
		prog.Scanned, prog.Copied, prog.CaughtUp, prog.Deleted, p.paced)

	// 4. The old collections retired, with the routers still running.
	for _, l := range []string{"dbs/app/colls/c0", "dbs/app/colls/c1"} {
		info, err := rst.CollectionInfo(ctx, l)
		require.NoError(t, err)
		assert.Zero(t, info.Documents, "%s is empty after the clean-up", l)
		require.NoError(t, rst.DeleteCollection(ctx, l))
	}
	m.waitOps(m.ops() + 20)
	rd.nextRound()
	stopWorkers()
	for _, p := range children {
		_ = p.Stdin.Close()
	}
	childDone.Wait()

	// Every document once where next puts it, at its last acknowledged
	// version; every answer right.
	r := settled(t, rst, next)
	colls, err := rst.ListCollections(ctx, db)
	require.NoError(t, err)
	assert.Equal(t, append([]string{"dbs/app/colls/_docshard"}, links...), colls, "every account listed; the old collections gone")
	found := readFound(t, rst, colls)
	checkEnd(t, found, r, m, rd)
	for i, w := range childWrong {
		assert.Empty(t, w, "reader process %d", i)
	}
	rep, err := transition.Verify(ctx, rst, db, next)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "verify: %d misplaced, %d duplicated", len(rep.Misplaced), len(rep.Duplicates))

	// Each target collection lives in its own account, and nowhere else.
	for _, ep := range []string{first.Endpoint, second, third} {
		plain, err := cosmos.New(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: ep}})
		require.NoError(t, err)
		for _, l := range links {
			info, err := plain.CollectionInfo(ctx, l)
			if acc.bound[l] != ep {
				assert.ErrorIs(t, err, store.ErrCollectionNotFound, "%s on %s", l, ep)
				continue
			}
			require.NoError(t, err)
			assert.EqualValues(t, len(found[l]), info.Documents, "%s on %s", l, ep)
		}
		require.NoError(t, plain.Close())
	}
	t.Logf("%d documents in %d collections over 2 accounts; the writer made %d operations", rep.Documents, len(links), m.ops())

	// A service left on the old configuration (serve alone) finds the
	// collections of the state's resolver missing there: its writes and
	// reads fail loudly, and no write is lost where no router looks.
	solo, err = cosmos.Open(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: first.Endpoint}})
	require.NoError(t, err)
	defer solo.Close()
	oc := router.New(solo, nil)
	of, err := oc.Follow(ctx, db, nil)
	require.NoError(t, err)
	defer of.Close()
	_, err = oc.Create(ctx, db, doc{ID: "stale-config", UserID: "u1", V: 1}, nil)
	require.ErrorIs(t, err, store.ErrCollectionNotFound)
	_, err = oc.Read(ctx, db, fixed[0].ID, fixed[0].UserID)
	require.ErrorIs(t, err, store.ErrCollectionNotFound, "not a plain NotFound")
}
