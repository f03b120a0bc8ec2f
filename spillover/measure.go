package spillover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

// measureLater starts measuring the oldest sealed collection without
// recorded bounds, in the background, unless a measurement is under way.
func (c *Coordinator) measureLater(r *Resolver) {
	var l string
	c.measureMu.Lock()
	for _, u := range r.Unmeasured() {
		if !c.tried[canonical(u)] {
			l = u
			break
		}
	}
	if l == "" || c.measuring {
		c.measureMu.Unlock()
		return
	}
	c.measuring = true
	c.measureMu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-c.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := c.Measure(ctx, l)
		cancel()
		c.measureMu.Lock()
		c.measuring = false
		c.measureMu.Unlock()
		if err != nil && ctx.Err() == nil && c.opts.OnError != nil {
			c.opts.OnError(err)
		}
	}()
}

// Measure records the range-key bounds of sealed collection l in the
// resolver: it waits until every router routes by a version in which l is
// sealed (so no write to it is still on its way), reads l whole, and
// publishes the resolver with l's lowest and highest range-key values.
// Documents without a value of the range type are left out: no range read
// can match them. A collection with no such value at all is left without
// bounds (always read). Cost: a read feed of the whole collection and a
// state change.
func (c *Coordinator) Measure(ctx context.Context, l string) error {
	s, err := shardstate.Load(ctx, c.st, c.db)
	if err != nil {
		return fmt.Errorf("spillover: %w", err)
	}
	r, _, err := c.decode(s)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, c.opts.RouterWait)
	err = shardstate.WaitForRouters(wctx, c.st, c.db, s.Version, c.opts.Routers)
	cancel()
	if err != nil {
		return fmt.Errorf("spillover: measuring %s: %w", l, err)
	}
	b, found, err := c.bounds(ctx, r, l)
	if err != nil {
		return err
	}
	if !found {
		c.measureMu.Lock()
		c.tried[canonical(l)] = true
		c.measureMu.Unlock()
		return nil
	}
	for range 10 {
		measured := true
		for _, u := range r.Unmeasured() {
			measured = measured && canonical(u) != canonical(l)
		}
		if measured {
			return nil
		}
		r2, err := r.WithBounds(b)
		if err != nil {
			return fmt.Errorf("spillover: the bounds of %s: %w", l, err)
		}
		_, err = shardstate.Publish(ctx, c.st, s, shardstate.Change{Resolver: r2, By: c.opts.By})
		var ce *shardstate.ConflictError
		if !errors.As(err, &ce) {
			if err != nil {
				return fmt.Errorf("spillover: recording the bounds of %s: %w", l, err)
			}
			return nil
		}
		if s, err = shardstate.Load(ctx, c.st, c.db); err != nil {
			return fmt.Errorf("spillover: %w", err)
		}
		if r, _, err = c.decode(s); err != nil {
			return err
		}
	}
	return fmt.Errorf("spillover: recording the bounds of %s: the state kept changing", l)
}

// bounds reads collection l whole and returns its range-key bounds.
func (c *Coordinator) bounds(ctx context.Context, r *Resolver, l string) (Bounds, bool, error) {
	var lo, hi value
	var loRaw, hiRaw json.RawMessage
	found := false
	opts := &store.FeedOptions{PageSize: 1000}
	for {
		page, err := c.st.ReadFeed(ctx, l, opts)
		if err != nil {
			return Bounds{}, false, fmt.Errorf("spillover: measuring %s: %w", l, err)
		}
		for _, item := range page.Items {
			k, err := r.rangeKey.Extract([]byte(item))
			if err != nil {
				continue
			}
			v, err := r.valueOf(k)
			if err != nil {
				continue
			}
			if !found || r.cmp(v, lo) < 0 {
				lo, loRaw = v, mustJSON(k)
			}
			if !found || r.cmp(v, hi) > 0 {
				hi, hiRaw = v, mustJSON(k)
			}
			found = true
		}
		if page.Continuation == "" {
			break
		}
		opts.Continuation = page.Continuation
	}
	return Bounds{Target: l, Low: loRaw, High: hiRaw}, found, nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
