package memstore

import (
	"sync"
	"testing"
	"time"

	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/storetest"
)

// fakeClock is a settable clock for TTL tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestConformanceInMemory(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	storetest.Run(t, func(t *testing.T) store.Store {
		s := New(&Options{Clock: clock.Now})
		t.Cleanup(func() { s.Close() })
		return s
	}, &storetest.Options{Advance: clock.Advance})
}

func TestConformanceDurable(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(t.TempDir(), &Options{Clock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, &storetest.Options{Advance: clock.Advance})
}
