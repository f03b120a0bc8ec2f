package memstore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// v2KeyText is the key text records of version 2 hold: store.KeyText as it
// was, with encoding/json's string escaping and strconv's 'g' numbers.
func v2KeyText(v any) string {
	switch x := v.(type) {
	case string:
		b, _ := json.Marshal(x)
		return string(b)
	case float64:
		if x == 0 {
			return "0"
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	if v == partitionkey.None {
		return store.NoneText
	}
	return "null"
}

// encodeRecordV3 writes a record as version 3 did: without an LSN.
func encodeRecordV3(e *entry) []byte {
	b := []byte{recordVersionV3}
	b = binary.AppendVarint(b, e.ts)
	b = binary.AppendVarint(b, e.expireAt)
	for _, s := range [...]string{e.etag, e.id, e.pk} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return append(b, e.body...)
}

// rewriteRecords replaces every record of the collection's bucket, which
// must be of the current version, by what rewrite makes of its entry, and
// returns how many it rewrote.
func rewriteRecords(t *testing.T, dir, l string, rewrite func(e *entry) []byte) int {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	recs := map[string][]byte{}
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		var m collMeta
		require.NoError(t, json.Unmarshal(tx.Bucket(collectionsBucket).Get([]byte(l)), &m))
		b := tx.Bucket(docsBucket(m.UID))
		require.NoError(t, b.ForEach(func(k, v []byte) error {
			require.Equal(t, byte(recordVersion), v[0])
			e, _, err := decodeRecord(v)
			require.NoError(t, err)
			recs[string(k)] = rewrite(e)
			return nil
		}))
		for k, rec := range recs {
			require.NoError(t, b.Put([]byte(k), rec))
		}
		return nil
	}))
	return len(recs)
}

// readRecords returns every record of the collection's bucket by seq.
func readRecords(t *testing.T, dir, l string) map[uint64][]byte {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	out := map[uint64][]byte{}
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		var m collMeta
		require.NoError(t, json.Unmarshal(tx.Bucket(collectionsBucket).Get([]byte(l)), &m))
		return tx.Bucket(docsBucket(m.UID)).ForEach(func(k, v []byte) error {
			out[binary.BigEndian.Uint64(k)] = append([]byte(nil), v...)
			return nil
		})
	}))
	return out
}

// TestDurableMigratesVersion2Records: a file whose records hold version-2
// key texts (written here the old way) opens with every document readable
// and queryable by its key, nothing lost, the records rewritten in the
// current format; new writes use it too.
func TestDurableMigratesVersion2Records(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	const l = "dbs/m/colls/c"
	keys := []any{
		"plain", "<&>", "line\u2028sep", "é日本", `q"\`, "1", "\u007f\x01",
		1.0, 1e-7, 1e21, 123456789.0, -0.5, 2.5e-300,
		true, false, partitionkey.Null, partitionkey.None,
	}
	s, err := Open(dir, &Options{Clock: clock.Now})
	require.NoError(t, err)
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk", DefaultTTL: new(-1)}))
	// The documents, written by this version: then their records are
	// turned into version 2, with the old key text, as the old version
	// wrote them. One expires before the file is opened again.
	docs := map[string]any{}
	for i, k := range keys {
		doc := map[string]any{"id": fmt.Sprint("d", i), "n": i}
		if k != partitionkey.None {
			doc["pk"] = k
			if k == partitionkey.Null {
				doc["pk"] = nil
			}
		}
		body, err := json.Marshal(doc)
		require.NoError(t, err)
		_, err = s.Create(ctx, l, body, nil)
		require.NoError(t, err)
		docs[fmt.Sprint("d", i)] = k
	}
	_, err = s.Create(ctx, l, []byte(`{"id":"gone","pk":"<&>","ttl":5}`), nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	n := rewriteRecords(t, dir, l, func(e *entry) []byte {
		if key, ok := docs[e.id]; ok {
			e.pk = v2KeyText(key)
		}
		rec := encodeRecordV3(e)
		rec[0] = recordVersionV2
		return rec
	})
	require.Equal(t, len(keys)+1, n)
	for _, rec := range readRecords(t, dir, l) {
		require.Equal(t, byte(recordVersionV2), rec[0], "the file holds version-2 records")
	}

	clock.Advance(10e9) // "gone" expires
	s, err = Open(dir, &Options{Clock: clock.Now})
	require.NoError(t, err)
	for id, key := range docs {
		d, err := s.Read(ctx, l, id, &store.ReadOptions{PartitionKey: key})
		require.NoError(t, err, "%s under %#v", id, key)
		assert.Equal(t, id, d.ID)
		page, err := s.Query(ctx, l, store.Query{Text: "SELECT VALUE c.id FROM c"}, &store.QueryOptions{PartitionKey: key})
		require.NoError(t, err)
		assert.Equal(t, []string{strconv.Quote(id)}, itemStrings(page.Items), "a query scoped to %#v", key)
	}
	_, err = s.Read(ctx, l, "d5", &store.ReadOptions{PartitionKey: 1.0})
	assert.ErrorIs(t, err, store.ErrNotFound, `"1" and 1 stay two keys`)
	info, err := s.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.EqualValues(t, len(keys), info.Documents, "nothing lost, the expired document dropped")
	_, err = s.Create(ctx, l, []byte(`{"id":"new","pk":"<&>"}`), nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	recs := readRecords(t, dir, l)
	assert.Len(t, recs, len(keys)+1)
	for seq, rec := range recs {
		e, old, err := decodeRecord(rec)
		require.NoError(t, err)
		assert.False(t, old, "record %d was rewritten", seq)
		want := store.NoneText
		if key, ok := docs[e.id]; ok {
			want, err = partitionkey.IdentityText(key)
			require.NoError(t, err)
		} else {
			assert.Equal(t, "new", e.id)
			want = `"<&>"`
		}
		assert.Equal(t, want, e.pk, "%s", e.id)
	}
	// And it opens again as it is.
	s, err = Open(dir, nil)
	require.NoError(t, err)
	_, err = s.Read(ctx, l, "d1", &store.ReadOptions{PartitionKey: "<&>"})
	assert.NoError(t, err)
	require.NoError(t, s.Close())
}

func itemStrings(items []json.RawMessage) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

// TestOpenLockedDirectory: a directory another opener holds fails with
// ErrLocked, naming the file, after the lock timeout asked for; once it is
// released, Open succeeds.
func TestOpenLockedDirectory(t *testing.T) {
	dir := t.TempDir()
	first, err := Open(dir, nil)
	require.NoError(t, err)
	cases := []struct {
		timeout, atMost time.Duration
	}{
		{time.Nanosecond, time.Second},
		{200 * time.Millisecond, 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.timeout.String(), func(t *testing.T) {
			began := time.Now()
			_, err := Open(dir, &Options{LockTimeout: tc.timeout})
			took := time.Since(began)
			require.ErrorIs(t, err, ErrLocked)
			assert.Contains(t, err.Error(), filepath.Join(dir, dbFile)+" is held by another process")
			assert.Less(t, took, tc.atMost)
		})
	}
	require.NoError(t, first.Close())
	second, err := Open(dir, &Options{LockTimeout: time.Nanosecond})
	require.NoError(t, err, "free once the first closed it")
	require.NoError(t, second.Close())
}
