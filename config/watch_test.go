package config_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/config"
)

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.yaml")
	write := func(s string) { require.NoError(t, os.WriteFile(path, []byte(s), 0o600)) }
	cfgText := func(n int) string {
		s := "databases:\n  - link: dbs/app\n    resolver: {kind: hash, partitionKey: /userId, collections: ["
		for i := range n {
			if i > 0 {
				s += ", "
			}
			s += "dbs/app/colls/u" + string(rune('0'+i))
		}
		return s + "]}\n"
	}
	write(cfgText(2))
	var mu sync.Mutex
	var changes []*config.Config
	var errs []error
	cfg, w, err := config.Watch(path, config.WatchOptions{
		Settle:   20 * time.Millisecond,
		OnChange: func(c *config.Config) { mu.Lock(); changes = append(changes, c); mu.Unlock() },
		OnError:  func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
	})
	require.NoError(t, err)
	defer w.Close()
	links := func(c *config.Config) int {
		l, err := c.Databases[0].Resolver.ResolveForRead(nil)
		require.NoError(t, err)
		return len(l)
	}
	assert.Equal(t, 2, links(cfg))

	write(cfgText(3))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(changes) == 1 }, 5*time.Second, 5*time.Millisecond)
	mu.Lock()
	assert.Equal(t, 3, links(changes[0]))
	mu.Unlock()

	// A broken edit is reported; nothing changes.
	write("databases:\n  - link: dbs/app\n    resolver: {kind: hash, collections: []}\n")
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(errs) == 1 }, 5*time.Second, 5*time.Millisecond)
	mu.Lock()
	assert.Contains(t, errs[0].Error(), "last good configuration stays")
	assert.Contains(t, errs[0].Error(), path)
	assert.Len(t, changes, 1)
	mu.Unlock()

	// An editor that writes a new file and renames it over the old one.
	tmp := filepath.Join(dir, "app.yaml.tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(cfgText(4)), 0o600))
	require.NoError(t, os.Rename(tmp, path))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(changes) == 2 }, 5*time.Second, 5*time.Millisecond)
	mu.Lock()
	assert.Equal(t, 4, links(changes[1]))
	mu.Unlock()

	require.NoError(t, w.Close())
	write(cfgText(5))
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	assert.Len(t, changes, 2, "nothing after Close")
	mu.Unlock()

	_, _, err = config.Watch(path, config.WatchOptions{})
	assert.ErrorContains(t, err, "OnChange")
}
