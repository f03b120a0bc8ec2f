package memstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

const damageColl = "dbs/d/colls/c"

// damageStore writes n documents (each with a recognisable "mark") into a
// durable store in a new directory, closes it and returns the directory.
func damageStore(t testing.TB, n int) string {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, s.CreateCollection(ctx, damageColl, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	for i := range n {
		body := fmt.Sprintf(`{"id":"doc%d","pk":"k%d","mark":"MARK%06d","pad":"%s"}`, i, i%7, i, bytes.Repeat([]byte("x"), 200))
		_, err := s.Create(ctx, damageColl, []byte(body), nil)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	return dir
}

func dbPath(dir string) string { return filepath.Join(dir, dbFile) }

// requireCorrupt: Open fails with a *CorruptError naming the file and
// saying why, and no panic or signal got out.
func requireCorrupt(t *testing.T, dir, reason string) *CorruptError {
	t.Helper()
	s, err := Open(dir, &Options{LockTimeout: time.Second})
	if s != nil {
		_ = s.Close()
	}
	require.Error(t, err)
	require.ErrorIs(t, err, ErrCorrupt)
	var ce *CorruptError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, dbPath(dir), ce.File)
	assert.Contains(t, err.Error(), dbPath(dir))
	assert.Contains(t, err.Error(), reason)
	return ce
}

// The reproducers of issue 17: a file truncated to half its size or to
// 8 KB killed the process with SIGBUS; an empty one opened as a new, empty
// store. Each is refused with an error that names the file.
func TestDamagedFileIsRefused(t *testing.T) {
	dir := damageStore(t, 2000)
	full, err := os.ReadFile(dbPath(dir))
	require.NoError(t, err)
	cases := []struct {
		name   string
		size   int
		reason string
	}{
		{"half", len(full) / 2, "truncated"},
		{"8 KB", 8 << 10, "truncated"},
		{"one page and a bit", os.Getpagesize() + 100, "truncated"},
		{"100 bytes", 100, "truncated"},
		{"60 bytes", 60, "neither meta page is valid"},
		{"empty", 0, "the file is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			require.NoError(t, os.WriteFile(dbPath(d), full[:tc.size], 0o600))
			requireCorrupt(t, d, tc.reason)
			if tc.size == 0 {
				fi, err := os.Stat(dbPath(d))
				require.NoError(t, err)
				assert.Zero(t, fi.Size(), "nothing was written into it")
			}
		})
	}
}

// A flipped byte inside a stored document is found on open by the
// record's checksum: a *CorruptError naming the collection and the id.
func TestFlippedByteInADocument(t *testing.T) {
	dir := damageStore(t, 50)
	raw, err := os.ReadFile(dbPath(dir))
	require.NoError(t, err)
	// Every copy (bbolt's free pages may hold older ones); "MARK1..." is
	// still valid JSON.
	require.Positive(t, bytes.Count(raw, []byte("MARK000017")))
	raw = bytes.ReplaceAll(raw, []byte("MARK000017"), []byte("MARK100017"))
	require.NoError(t, os.WriteFile(dbPath(dir), raw, 0o600))
	ce := requireCorrupt(t, dir, "checksum does not match")
	assert.Equal(t, damageColl, ce.Collection)
	assert.Equal(t, "doc17", ce.ID)
	assert.Contains(t, ce.Error(), `document id "doc17"`)
}

// Random bytes over any one page of the file: Open either succeeds (the
// page was free, or a meta page bbolt replaces by the other) or fails
// with ErrCorrupt; it never panics or dies of a signal.
func TestRandomPageNeverCrashes(t *testing.T) {
	dir := damageStore(t, 300)
	full, err := os.ReadFile(dbPath(dir))
	require.NoError(t, err)
	ps := os.Getpagesize()
	rng := rand.New(rand.NewPCG(17, 17))
	corrupt := 0
	for page := 0; page*ps < len(full); page++ {
		d := t.TempDir()
		damaged := bytes.Clone(full)
		for i := page * ps; i < min((page+1)*ps, len(damaged)); i++ {
			damaged[i] = byte(rng.Uint32())
		}
		require.NoError(t, os.WriteFile(dbPath(d), damaged, 0o600))
		s, err := Open(d, &Options{LockTimeout: time.Second})
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt, "page %d", page)
			corrupt++
			continue
		}
		require.NoError(t, s.Close())
	}
	assert.Positive(t, corrupt, "some damage is found")
}

// A store open for writing in one process: a second opener is told which
// file and that another process holds it; read-only openers share the
// file with each other, and a read-only store refuses writes.
func TestReadOnlyOpen(t *testing.T) {
	dir := damageStore(t, 10)
	ctx := context.Background()
	w, err := Open(dir, nil)
	require.NoError(t, err)
	_, err = Open(dir, &Options{ReadOnly: true, LockTimeout: 50 * time.Millisecond})
	require.ErrorIs(t, err, ErrLocked)
	assert.Contains(t, err.Error(), dbPath(dir))
	assert.Contains(t, err.Error(), "another process has it open for writing")
	require.NoError(t, w.Close())

	r1, err := Open(dir, &Options{ReadOnly: true, LockTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	r2, err := Open(dir, &Options{ReadOnly: true, LockTimeout: 50 * time.Millisecond})
	require.NoError(t, err, "read-only openers share the file")
	d, err := r2.Read(ctx, damageColl, "doc3", &store.ReadOptions{PartitionKey: "k3"})
	require.NoError(t, err)
	assert.Equal(t, "doc3", d.ID)
	_, err = r1.Create(ctx, damageColl, []byte(`{"id":"new","pk":"a"}`), nil)
	require.ErrorIs(t, err, ErrReadOnly)
	require.ErrorIs(t, err, store.ErrBadRequest)
	require.ErrorIs(t, r1.CreateCollection(ctx, "dbs/d/colls/other", nil), ErrReadOnly)
	require.NoError(t, r1.Close())
	require.NoError(t, r2.Close())

	_, err = Open(t.TempDir(), &Options{ReadOnly: true})
	require.ErrorIs(t, err, os.ErrNotExist, "a read-only open creates nothing")
}

// FuzzDamagedFile: any bytes written anywhere into a valid store file, or
// the file cut anywhere, make Open succeed or fail with an error; never a
// panic or a signal.
func FuzzDamagedFile(f *testing.F) {
	dir := damageStore(f, 40)
	full, err := os.ReadFile(dbPath(dir))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(0), []byte{0xff}, uint32(0))
	f.Add(uint32(4096+20), []byte("garbage"), uint32(0))
	f.Add(uint32(3*4096), bytes.Repeat([]byte{0}, 4096), uint32(0))
	f.Add(uint32(0), []byte{}, uint32(len(full)/2))
	f.Fuzz(func(t *testing.T, at uint32, data []byte, cut uint32) {
		damaged := bytes.Clone(full)
		off := int(at % uint32(len(full)))
		copy(damaged[off:], data)
		if cut > 0 {
			damaged = damaged[:int(cut%uint32(len(full)))]
		}
		d := t.TempDir()
		if err := os.WriteFile(dbPath(d), damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(d, &Options{LockTimeout: time.Second, NoSync: true})
		if err == nil {
			_ = s.Close()
		}
	})
}

// Salvage copies every intact document of a damaged store into a new one
// and names what it leaves behind: the flipped document, or, for a
// truncated file, the collection whose walk stopped.
func TestSalvage(t *testing.T) {
	ctx := context.Background()
	t.Run("flipped byte", func(t *testing.T) {
		dir := damageStore(t, 50)
		raw, err := os.ReadFile(dbPath(dir))
		require.NoError(t, err)
		raw = bytes.ReplaceAll(raw, []byte("MARK000017"), []byte("MARK100017"))
		require.NoError(t, os.WriteFile(dbPath(dir), raw, 0o600))
		to := filepath.Join(t.TempDir(), "saved")
		rep, err := Salvage(dir, to)
		require.NoError(t, err)
		assert.Equal(t, 1, rep.Collections)
		assert.Equal(t, 49, rep.Documents)
		require.Len(t, rep.Damaged, 1)
		assert.Equal(t, "doc17", rep.Damaged[0].ID)
		assert.Equal(t, damageColl, rep.Damaged[0].Collection)
		s, err := Open(to, nil)
		require.NoError(t, err)
		defer s.Close()
		d, err := s.Read(ctx, damageColl, "doc18", &store.ReadOptions{PartitionKey: "k4"})
		require.NoError(t, err)
		assert.Contains(t, string(d.Body), "MARK000018")
		_, err = s.Read(ctx, damageColl, "doc17", &store.ReadOptions{PartitionKey: "k3"})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = Salvage(dir, to)
		require.Error(t, err, "never over an existing store")
	})
	t.Run("truncated", func(t *testing.T) {
		dir := damageStore(t, 2000)
		raw, err := os.ReadFile(dbPath(dir))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dbPath(dir), raw[:len(raw)/2], 0o600))
		to := filepath.Join(t.TempDir(), "saved")
		rep, err := Salvage(dir, to)
		require.NoError(t, err)
		t.Logf("kept %d of 2000; stopped: %v; damaged: %d", rep.Documents, rep.Stopped, len(rep.Damaged))
		assert.Less(t, rep.Documents, 2000)
		assert.Positive(t, rep.Documents, "the intact half is kept")
		assert.True(t, len(rep.Stopped) > 0 || len(rep.Damaged) > 0, "the damage is reported")
		s, err := Open(to, nil)
		require.NoError(t, err)
		info, err := s.CollectionInfo(ctx, damageColl)
		require.NoError(t, err)
		assert.EqualValues(t, rep.Documents, info.Documents)
		require.NoError(t, s.Close())
	})
	t.Run("empty", func(t *testing.T) {
		d := t.TempDir()
		require.NoError(t, os.WriteFile(dbPath(d), nil, 0o600))
		_, err := Salvage(d, filepath.Join(t.TempDir(), "saved"))
		require.ErrorIs(t, err, ErrCorrupt)
	})
}

// TestReadOnlyLoadsOnFirstUse: a read-only store loads a collection's
// documents on its first use, so a damaged collection does not keep the
// others from being read; its damage is reported, typed, when it is used;
// many first uses at once load it once; and a use after Close fails
// cleanly.
func TestReadOnlyLoadsOnFirstUse(t *testing.T) {
	dir := damageStore(t, 50)
	ctx := context.Background()
	w, err := Open(dir, nil)
	require.NoError(t, err)
	const good = "dbs/d/colls/good"
	require.NoError(t, w.CreateCollection(ctx, good, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	for i := range 30 {
		_, err := w.Create(ctx, good, fmt.Appendf(nil, `{"id":"g%d","pk":"p%d"}`, i, i%3), nil)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	raw, err := os.ReadFile(dbPath(dir))
	require.NoError(t, err)
	raw = bytes.ReplaceAll(raw, []byte("MARK000017"), []byte("MARK100017"))
	require.NoError(t, os.WriteFile(dbPath(dir), raw, 0o600))

	r, err := Open(dir, &Options{ReadOnly: true})
	require.NoError(t, err, "nothing is loaded yet")
	var wg sync.WaitGroup
	counts := make([]string, 8)
	for i := range counts {
		wg.Go(func() {
			page, err := r.Query(ctx, good, store.Query{Text: `SELECT VALUE COUNT(1) FROM c`}, nil)
			if assert.NoError(t, err) {
				counts[i] = string(page.Items[0])
			}
		})
	}
	wg.Wait()
	for _, n := range counts {
		assert.Equal(t, "30", n)
	}
	colls, err := r.ListCollections(ctx, "dbs/d")
	require.NoError(t, err)
	assert.Equal(t, []string{damageColl, good}, colls)

	_, err = r.Read(ctx, damageColl, "doc3", &store.ReadOptions{PartitionKey: "k3"})
	require.ErrorIs(t, err, store.ErrUnavailable)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "doc17", ce.ID)
	_, err = r.CollectionInfo(ctx, damageColl)
	require.ErrorAs(t, err, &ce, "the damage stays reported")

	r2, err := Open(dir, &Options{ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, r2.Close())
	_, err = r2.Read(ctx, good, "g1", &store.ReadOptions{PartitionKey: "p1"})
	require.Error(t, err, "a collection first used after Close is not loaded")
	require.NoError(t, r.Close())
}
