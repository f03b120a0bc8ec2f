package memstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/docshard/docshard/store"
)

var _ store.Fencer = (*Store)(nil)

// dbFence is the fence of one database. A write stamped with an epoch
// holds mu for reading from its check of the fence until its change is
// committed and published; RaiseFence holds it for writing while it
// raises the fence. So a raise waits for the stamped writes in progress,
// and every stamped write either finished before the raise (under the old
// fence) or checks the new one. Unstamped writes never touch it.
type dbFence struct {
	mu    sync.RWMutex
	epoch atomic.Int64 // written under mu held for writing
}

// fenceOf returns the fence of a database ("dbs/{db}"), creating it at 0.
func (s *Store) fenceOf(db string) *dbFence {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	f := s.fences[db]
	if f == nil {
		f = &dbFence{}
		if s.fences == nil {
			s.fences = map[string]*dbFence{}
		}
		s.fences[db] = f
	}
	return f
}

// fenceFor returns the fence of c's database, cached in c after the first
// stamped write.
func (s *Store) fenceFor(c *collection) *dbFence {
	if f := c.fence.Load(); f != nil {
		return f
	}
	f := s.fenceOf(c.link[:strings.Index(c.link, "/colls/")]) // canonical: dbs/{db}/colls/{coll}
	c.fence.Store(f)
	return f
}

// enterFence checks a write stamped with epoch against the fence of c's
// database and, when it passes, returns the fence held for reading: the
// caller releases it (unlock, or f.mu.RUnlock) once its change is
// published. A write below the fence is an error wrapping store.ErrFenced
// that names both epochs; a negative epoch, one wrapping
// store.ErrBadRequest.
func (s *Store) enterFence(c *collection, op, l, id string, epoch int64) (*dbFence, error) {
	if epoch < 0 {
		return nil, store.Errorf(store.ErrBadRequest, op, l, id, "epoch %d is negative", epoch)
	}
	f := s.fenceFor(c)
	f.mu.RLock()
	if cur := f.epoch.Load(); epoch < cur {
		f.mu.RUnlock()
		return nil, store.Errorf(store.ErrFenced, op, l, id, "the write's epoch %d is below the fence %d of its database", epoch, cur)
	}
	return f, nil
}

// unlock releases a document's write lock and, after a stamped write, its
// database's fence (f is nil after an unstamped one). Writers defer this
// one call rather than two, which keeps their defers open-coded (Go
// open-codes at most 15 returns times defers), so unstamped writes cost
// what they did before fencing.
func unlock(m *sync.Mutex, f *dbFence) {
	m.Unlock()
	if f != nil {
		f.mu.RUnlock()
	}
}

// RaiseFence raises the fence of a database to epoch, if that is higher,
// and returns the fence in force; see store.Fencer. It waits for the
// database's stamped writes in progress to finish (they hold its fence for
// reading), and stamped writes that arrive meanwhile wait for it and then
// check the new fence. In durable mode the new fence is on disk before it
// takes effect, so fences survive restarts; they never go down. A database
// need not exist to be fenced. A negative epoch is an error wrapping
// store.ErrBadRequest.
func (s *Store) RaiseFence(ctx context.Context, databaseLink string, epoch int64) (int64, error) {
	const op = "raise fence"
	db, err := s.beginDatabase(ctx, op, databaseLink)
	if err != nil {
		return 0, err
	}
	if epoch < 0 {
		return 0, store.Errorf(store.ErrBadRequest, op, databaseLink, "", "epoch %d is negative", epoch)
	}
	f := s.fenceOf(db)
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur := f.epoch.Load(); epoch <= cur {
		return cur, nil
	}
	if s.disk != nil {
		o := &diskOp{kind: opFence, bucket: fencesBucket, link: []byte(db), seq: uint64(epoch)}
		if err := s.disk.submit(o, true); err != nil {
			return 0, s.diskErr(op, databaseLink, "", err)
		}
	}
	f.epoch.Store(epoch)
	return epoch, nil
}

// Fence returns the fence of a database, 0 when none was raised; see
// store.Fencer. It takes no lock.
func (s *Store) Fence(ctx context.Context, databaseLink string) (int64, error) {
	db, err := s.beginDatabase(ctx, "read fence", databaseLink)
	if err != nil {
		return 0, err
	}
	s.fenceMu.Lock()
	f := s.fences[db]
	s.fenceMu.Unlock()
	if f == nil {
		return 0, nil
	}
	return f.epoch.Load(), nil
}

// loadFence sets a database's fence from its durable record.
func (s *Store) loadFence(db, v []byte) error {
	if len(v) != 8 {
		return fmt.Errorf("the fence of %s is corrupt (%d bytes)", db, len(v))
	}
	s.fenceOf(string(db)).epoch.Store(int64(binary.BigEndian.Uint64(v)))
	return nil
}
