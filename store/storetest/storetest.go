// Package storetest is the conformance suite of the store.Store contract.
// Every backend runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return memstore.New(nil) }, nil)
//	}
//
// Each case is a subtest named by its key (the Skip... constants). A
// backend that cannot pass a case lists its key in Options.Skip with the
// reason; the case then reports t.Skip with that reason, never silently.
// A few cases check several features and leave out only the checks of a
// skipped feature (logging that they do). Cases create collections with
// unique names and delete them when done, so backends may share one
// server between cases and between runs.
//
// What it covers: every operation of store.Store and every error it
// names; ETag preconditions and optimistic concurrency; identity by
// (partition key, id), including the undefined and null keys; scoping of
// reads, writes and queries by partition key; paging and resumption of
// queries and of the read feed, and the validation of their tokens; the
// feed's stability while documents are written; concurrent writers (run it
// under -race); refused input (malformed JSON, bad ids, unknown
// collections, malformed SQL, bad tokens) with nothing half-written; usage;
// TTL with a controllable clock; use after Close and cancelled contexts.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/store"
)

// Case keys, for Options.Skip. Each names one subtest (whose name is the
// key's value) or, where said, one group of checks inside others.
const (
	SkipCollectionLifecycle      = "CollectionLifecycle"
	SkipListCollections          = "ListCollections"          // also the listing checks of CollectionLifecycle
	SkipCollectionSpecKept       = "CollectionSpecKept"       // DefaultTTL and the indexing policy read back by CollectionInfo
	SkipCollectionSpecValidation = "CollectionSpecValidation" // a bad key path or defaultTtl refused
	SkipMissingCollection        = "MissingCollection"
	SkipCreateRead               = "CreateRead"
	SkipCreateConflict           = "CreateConflict"
	SkipSystemProperties         = "SystemProperties" // a caller's _etag, _ts, _rid, _self replaced
	SkipBadDocuments             = "BadDocuments"
	SkipDocumentSize             = "DocumentSize" // the 2 MB limit
	SkipReplace                  = "Replace"
	SkipUpsert                   = "Upsert"
	SkipDelete                   = "Delete"
	SkipIfMatchOnReplace         = "IfMatchOnReplace"
	SkipIfMatchOnDelete          = "IfMatchOnDelete"
	SkipIfMatchOnUpsert          = "IfMatchOnUpsert"
	SkipOptimisticConcurrency    = "OptimisticConcurrency" // concurrent read-modify-replace with If-Match
	SkipSameIDDifferentKey       = "SameIDDifferentKey"    // one id under two key values
	SkipPartitionKeyScopedRead   = "PartitionKeyScopedRead"
	SkipPartitionKeyMismatch     = "PartitionKeyMismatch"    // a given key that differs from the body's refused
	SkipReadWithoutPartitionKey  = "ReadWithoutPartitionKey" // read and delete by id alone when unambiguous
	SkipUndefinedPartitionKey    = "UndefinedPartitionKey"   // documents without a key value, store.None
	SkipNullPartitionKey         = "NullPartitionKey"        // documents whose key is JSON null, store.Null
	SkipNothingHalfWritten       = "NothingHalfWritten"
	SkipQuery                    = "Query"
	SkipQuerySemantics           = "QuerySemantics" // number comparisons, empty aggregates, functions as Cosmos DB
	SkipSingleQuotedStrings      = "SingleQuotedStrings"
	SkipQueryErrors              = "QueryErrors"
	SkipPartitionKeyScopedQuery  = "PartitionKeyScopedQuery"
	SkipQueryPaging              = "QueryPaging"
	SkipContinuationValidation   = "ContinuationValidation" // tokens of other queries, keys, collections refused
	SkipReadFeed                 = "ReadFeed"
	SkipFeedStableUnderWrites    = "ReadFeedStableUnderWrites"
	SkipConcurrentWriters        = "ConcurrentWriters"
	SkipAtomicUpsert             = "AtomicUpsert" // concurrent upserts of one stored document, read throughout
	SkipUsage                    = "Usage"        // CollectionInfo's document count and bytes
	SkipQuota                    = "Quota"        // CollectionSpec.Quota kept and enforced under concurrent writers (a docshard extension)
	SkipTTL                      = "TTL"
	SkipUseAfterClose            = "UseAfterClose"
	SkipContextCanceled          = "ContextCanceled"
)

// Options qualify a run. A nil *Options means none.
type Options struct {
	// Skip maps case keys to the reason the backend cannot pass them. An
	// unknown key fails the run (a typo would otherwise skip nothing).
	Skip map[string]string
	// Database is the database the cases create collections in; empty
	// means "storetest".
	Database string
	// Advance moves the backend's clock forward, for the TTL case; nil
	// skips it (a backend without a controllable clock).
	Advance func(d time.Duration)
}

type suite struct {
	newStore func(t *testing.T) store.Store
	opts     Options
}

type testCase struct {
	key string
	fn  func(s *suite, t *testing.T, st store.Store)
}

var cases = []testCase{
	{SkipCollectionLifecycle, (*suite).collectionLifecycle},
	{SkipListCollections, (*suite).listCollections},
	{SkipCollectionSpecKept, (*suite).collectionSpecKept},
	{SkipCollectionSpecValidation, (*suite).collectionSpecValidation},
	{SkipMissingCollection, (*suite).missingCollection},
	{SkipCreateRead, (*suite).createRead},
	{SkipCreateConflict, (*suite).createConflict},
	{SkipSystemProperties, (*suite).systemProperties},
	{SkipBadDocuments, (*suite).badDocuments},
	{SkipDocumentSize, (*suite).documentSize},
	{SkipReplace, (*suite).replace},
	{SkipUpsert, (*suite).upsert},
	{SkipDelete, (*suite).deleteDoc},
	{SkipIfMatchOnReplace, (*suite).ifMatchReplace},
	{SkipIfMatchOnDelete, (*suite).ifMatchDelete},
	{SkipIfMatchOnUpsert, (*suite).ifMatchUpsert},
	{SkipOptimisticConcurrency, (*suite).optimisticConcurrency},
	{SkipSameIDDifferentKey, (*suite).sameIDDifferentKey},
	{SkipPartitionKeyScopedRead, (*suite).partitionKeyScopedRead},
	{SkipPartitionKeyMismatch, (*suite).partitionKeyMismatch},
	{SkipReadWithoutPartitionKey, (*suite).readWithoutPartitionKey},
	{SkipUndefinedPartitionKey, (*suite).undefinedPartitionKey},
	{SkipNullPartitionKey, (*suite).nullPartitionKey},
	{SkipNothingHalfWritten, (*suite).nothingHalfWritten},
	{SkipQuery, (*suite).queryBasic},
	{SkipQuerySemantics, (*suite).querySemantics},
	{SkipSingleQuotedStrings, (*suite).singleQuoted},
	{SkipQueryErrors, (*suite).queryErrors},
	{SkipPartitionKeyScopedQuery, (*suite).partitionKeyScopedQuery},
	{SkipQueryPaging, (*suite).queryPaging},
	{SkipContinuationValidation, (*suite).continuationValidation},
	{SkipReadFeed, (*suite).readFeed},
	{SkipFeedStableUnderWrites, (*suite).readFeedStable},
	{SkipChangeFeed, (*suite).changeFeed},
	{SkipChangeFeedPaging, (*suite).changeFeedPaging},
	{SkipChangeFeedResume, (*suite).changeFeedResume},
	{SkipChangeFeedFromNow, (*suite).changeFeedFromNow},
	{SkipChangeFeedPartitionKey, (*suite).changeFeedPartitionKey},
	{SkipChangeFeedTokens, (*suite).changeFeedTokens},
	{SkipChangeFeedConcurrentWriters, (*suite).changeFeedConcurrentWriters},
	{SkipChangeFeedBatch, (*suite).changeFeedBatch},
	{SkipConcurrentWriters, (*suite).concurrentWriters},
	{SkipAtomicUpsert, (*suite).atomicUpsert},
	{SkipUsage, (*suite).usage},
	{SkipQuota, (*suite).quota},
	{SkipTTL, (*suite).ttl},
	{SkipUseAfterClose, (*suite).useAfterClose},
	{SkipContextCanceled, (*suite).contextCanceled},
	{SkipBatch, (*suite).batch},
	{SkipBatchAtomic, (*suite).batchAtomic},
	{SkipBatchValidation, (*suite).batchValidation},
	{SkipBatchIsolation, (*suite).batchIsolation},
	{SkipFence, (*suite).fence},
	{SkipFenceConcurrent, (*suite).fenceConcurrent},
	{SkipHierarchicalPartitionKey, (*suite).hierarchicalKey},
	{SkipPatch, (*suite).patch},
	{SkipPatchCondition, (*suite).patchCondition},
	{SkipPatchRefused, (*suite).patchRefused},
	{SkipPatchConcurrent, (*suite).patchConcurrent},
	{SkipBatchPatch, (*suite).batchPatch},
	{SkipReadMany, (*suite).readMany},
}

// Keys returns every case key, in the order the cases run.
func Keys() []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.key
	}
	return out
}

// Run runs every case as a subtest, each on a store from newStore (which
// should register its own cleanup, e.g. closing the store, with t.Cleanup).
func Run(t *testing.T, newStore func(t *testing.T) store.Store, opts *Options) {
	s := &suite{newStore: newStore}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Database == "" {
		s.opts.Database = "storetest"
	}
	known := map[string]bool{}
	for _, c := range cases {
		known[c.key] = true
	}
	for k := range s.opts.Skip {
		if !known[k] {
			t.Fatalf("storetest: unknown skip key %q (known: %s)", k, strings.Join(Keys(), ", "))
		}
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			if reason, ok := s.opts.Skip[c.key]; ok {
				t.Skipf("backend lacks %s: %s", c.key, reason)
			}
			c.fn(s, t, s.newStore(t))
		})
	}
}

// lacks reports whether the backend declared key, logging the reason, for
// cases that leave out one group of checks and run the rest.
func (s *suite) lacks(t *testing.T, key string) bool {
	t.Helper()
	reason, ok := s.opts.Skip[key]
	if ok {
		t.Logf("leaving out the %s checks: %s", key, reason)
	}
	return ok
}

// skipIf skips the whole case when the backend lacks a feature it needs.
func (s *suite) skipIf(t *testing.T, key string) {
	t.Helper()
	if reason, ok := s.opts.Skip[key]; ok {
		t.Skipf("needs %s, which the backend lacks: %s", key, reason)
	}
}

var ctx = context.Background()

// collLink returns a unique collection link for the running case.
func (s *suite) collLink(t *testing.T) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.ToLower(t.Name())
	name = strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return r
		}
		return '-'
	}, name)
	if len(name) > 48 {
		name = name[len(name)-48:]
	}
	return fmt.Sprintf("dbs/%s/colls/%s-%s", s.opts.Database, strings.Trim(name, "-"), hex.EncodeToString(b[:]))
}

// coll creates a collection with a unique name, deleted when the case
// ends, and returns its link.
func (s *suite) coll(t *testing.T, st store.Store, spec *store.CollectionSpec) string {
	t.Helper()
	l := s.collLink(t)
	require.NoError(t, st.CreateCollection(ctx, l, spec))
	t.Cleanup(func() { _ = st.DeleteCollection(context.Background(), l) })
	return l
}

func byKey(path string) *store.CollectionSpec {
	return &store.CollectionSpec{PartitionKeyPath: path}
}

func doc(t *testing.T, v map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func body(t *testing.T, d *store.Document) map[string]any {
	t.Helper()
	return object(t, d.Body)
}

func object(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	return m
}

func pk(key any) *store.ReadOptions { return &store.ReadOptions{PartitionKey: key} }

func wpk(key any) *store.WriteOptions { return &store.WriteOptions{PartitionKey: key} }

// docKey identifies a feed or query item by its "pk" and "id" properties.
func docKey(m map[string]any) string {
	p, ok := m["pk"]
	if !ok {
		return "<none>|" + fmt.Sprint(m["id"])
	}
	return fmt.Sprintf("%v|%v", p, m["id"])
}

// feedAll walks the read feed and returns every document by docKey,
// failing on a document returned twice or a page above the page size.
func feedAll(t *testing.T, st store.Store, l string, pageSize int) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	cont := ""
	for i := 0; ; i++ {
		require.Less(t, i, 100000, "the feed does not end")
		page, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: pageSize, Continuation: cont})
		require.NoError(t, err)
		if pageSize > 0 {
			require.LessOrEqual(t, len(page.Items), pageSize, "a feed page holds at most the page size")
		}
		for _, item := range page.Items {
			m := object(t, item)
			k := docKey(m)
			_, dup := out[k]
			require.False(t, dup, "the feed returned %s twice", k)
			out[k] = m
		}
		if page.Continuation == "" {
			return out
		}
		cont = page.Continuation
	}
}

// snapshot returns every stored document text by docKey, system
// properties included, for checking that nothing changed.
func snapshot(t *testing.T, st store.Store, l string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, m := range feedAll(t, st, l, 0) {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		out[k] = string(b)
	}
	return out
}

// QueryAll runs a query to the end, page by page, checking that no page
// holds more than the page size; it fails the test on an error.
func QueryAll(t *testing.T, st store.Store, l string, q store.Query, opts *store.QueryOptions) []json.RawMessage {
	t.Helper()
	o := opt.Of(opts)
	var out []json.RawMessage
	for i := 0; ; i++ {
		require.Less(t, i, 100000, "the query does not end")
		page, err := st.Query(ctx, l, q, &o)
		require.NoError(t, err, q.Text)
		if o.PageSize > 0 {
			require.LessOrEqual(t, len(page.Items), o.PageSize, "a query page holds at most the page size")
		}
		out = append(out, page.Items...)
		if page.Continuation == "" {
			return out
		}
		o.Continuation = page.Continuation
	}
}

func values(t *testing.T, items []json.RawMessage) []any {
	t.Helper()
	out := make([]any, len(items))
	for i, it := range items {
		require.NoError(t, json.Unmarshal(it, &out[i]), "%s", it)
	}
	return out
}

func sortedStrings(t *testing.T, items []json.RawMessage) []string {
	t.Helper()
	out := make([]string, len(items))
	for i, it := range items {
		require.NoError(t, json.Unmarshal(it, &out[i]), "%s", it)
	}
	sort.Strings(out)
	return out
}

// requireKind fails unless err wraps kind; format and args say what was
// tried.
func requireKind(t *testing.T, err error, kind error, format string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	require.Error(t, err, "%s: want an error wrapping %v", what, kind)
	if !errors.Is(err, kind) {
		require.Failf(t, "wrong error kind", "%s: want %v, got %v (%T)", what, kind, err, err)
	}
}

// seed creates n documents in a collection keyed by /pk: ids d000...,
// keys p0-p2 in turn, n the index, s red/green/blue in turn, tags on every
// fifth.
func seed(t *testing.T, st store.Store, l string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		m := map[string]any{"id": fmt.Sprintf("d%03d", i), "pk": fmt.Sprintf("p%d", i%3), "n": float64(i), "s": []string{"red", "green", "blue"}[i%3]}
		if i%5 == 0 {
			m["tags"] = []any{"red", "x"}
		}
		_, err := st.Create(ctx, l, doc(t, m), nil)
		require.NoError(t, err)
	}
}

// untilClosed calls body with 0, 1, 2, ... until stop is closed or body
// returns false: the loop of a reader or writer that runs beside a test's
// main work.
func untilClosed(stop <-chan struct{}, body func(i int) bool) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		if !body(i) {
			return
		}
	}
}

// readWhileWriting runs readers goroutines calling read(r) over and over,
// each until it returns false, while writers goroutines run write(w) once
// each; when every write has returned, the readers stop, and it returns
// once they have.
func readWhileWriting(readers, writers int, read func(r int) bool, write func(w int)) {
	stop := make(chan struct{})
	var rg, wg sync.WaitGroup
	for r := range readers {
		rg.Go(func() { untilClosed(stop, func(int) bool { return read(r) }) })
	}
	for w := range writers {
		wg.Go(func() { write(w) })
	}
	wg.Wait()
	close(stop)
	rg.Wait()
}
