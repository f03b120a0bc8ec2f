package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOptions configure Watch. OnChange is required.
type WatchOptions struct {
	// OnChange is called with the configuration each time the file changes
	// and loads without error (not for the first load, which Watch
	// returns). Register the databases' resolvers with a router here; a
	// database the router follows by its shared state document
	// (router.Client.Follow) keeps that state, which wins over the file.
	OnChange func(*Config)
	// OnError is called when a changed file does not load (malformed, a bad
	// resolver): the last good configuration stays in force. Nil ignores
	// such errors.
	OnError func(error)
	// Settle is how long the file must be quiet before it is read again,
	// so an editor's several writes load once; 0 means 100 ms.
	Settle time.Duration
}

// Watcher watches a configuration file; Close stops it.
type Watcher struct {
	w    *fsnotify.Watcher
	done chan struct{}
	once sync.Once
}

// Watch loads the configuration file at path, returns it, and calls
// opts.OnChange with each later version of the file that loads, until
// Close. It watches the file's directory, so an editor that replaces the
// file (write to a temporary file, rename over) is followed too. Cost: one
// goroutine and one inotify (or the platform's) watch.
//
// viper has a WatchConfig of its own, but it reloads into a viper instance,
// which folds keys to lower case (see Parse); Watch reloads through Load,
// so a watched file is read exactly as a loaded one.
func Watch(path string, opts WatchOptions) (*Config, *Watcher, error) {
	if opts.OnChange == nil {
		return nil, nil, errors.New("config: Watch needs an OnChange function")
	}
	if opts.Settle <= 0 {
		opts.Settle = 100 * time.Millisecond
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: watching %s: %w", path, err)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, nil, fmt.Errorf("config: watching %s: %w", path, err)
	}
	if err := fw.Add(filepath.Dir(abs)); err != nil {
		_ = fw.Close()
		return nil, nil, fmt.Errorf("config: watching %s: %w", path, err)
	}
	// The text a change is compared with is read after the watch starts
	// and before Watch returns, so a write that follows either is an event
	// and differs from it.
	last, _ := os.ReadFile(abs)
	cfg, err := Load(path)
	if err != nil {
		_ = fw.Close()
		return nil, nil, err
	}
	w := &Watcher{w: fw, done: make(chan struct{})}
	go w.run(path, abs, last, opts)
	return cfg, w, nil
}

// run reloads the file after each quiet change until Close; last is its
// text as Watch read it.
func (w *Watcher) run(path, abs string, last []byte, opts WatchOptions) {
	defer close(w.done)
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) != abs || ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename) == 0 {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(opts.Settle)
			} else {
				timer.Reset(opts.Settle)
			}
			fire = timer.C
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			if opts.OnError != nil {
				opts.OnError(fmt.Errorf("config: watching %s: %w", path, err))
			}
		case <-fire:
			fire = nil
			data, err := os.ReadFile(abs)
			if err == nil && string(data) == string(last) {
				continue // touched, not changed
			}
			cfg, err := Load(path)
			if err != nil {
				if opts.OnError != nil {
					opts.OnError(fmt.Errorf("%w (the last good configuration stays in force)", err))
				}
				continue
			}
			last = data
			opts.OnChange(cfg)
		}
	}
}

// Close stops watching; OnChange is not called after it returns.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		err = w.w.Close()
		<-w.done
	})
	return err
}
