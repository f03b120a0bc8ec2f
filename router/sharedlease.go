package router

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"time"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

// sharedLease is the one lease a process holds on a database for all its
// Followers of it over one store that set FollowOptions.ShareLease: it
// names the oldest version any of them acknowledges, is held for the
// longest of their leases and renewed at the shortest of their renew
// intervals, and is released when the last of them closes.
type sharedLease struct {
	key    sharedKey
	router string
	base   time.Time // the origin of the times below

	mu      sync.Mutex
	members map[*Follower]struct{}
	lease   *shardstate.Lease // as last written; nil: none held
	gen     uint64            // grows with each take of the lease
	takenAt int64             // when the current take returned (ns since base)
	sent    int64             // when the last renewal was sent (ns since base)
}

type sharedKey struct {
	st store.Store
	db string
}

var sharedLeases struct {
	mu sync.Mutex
	m  map[sharedKey]*sharedLease
}

// joinShared adds f to the process's lease on db over st, creating it (as
// router, or a new id when empty); nil when st cannot be told apart from
// other stores (not comparable).
func joinShared(st store.Store, db, router string, f *Follower) *sharedLease {
	if st == nil || !reflect.TypeOf(st).Comparable() {
		return nil
	}
	k := sharedKey{st: st, db: db}
	sharedLeases.mu.Lock()
	defer sharedLeases.mu.Unlock()
	p := sharedLeases.m[k]
	if p == nil {
		if router == "" {
			router = newRouterID()
		}
		p = &sharedLease{key: k, router: router, base: time.Now(), members: map[*Follower]struct{}{}}
		if sharedLeases.m == nil {
			sharedLeases.m = map[sharedKey]*sharedLease{}
		}
		sharedLeases.m[k] = p
	}
	p.mu.Lock()
	p.members[f] = struct{}{}
	p.mu.Unlock()
	return p
}

// leave removes f, and reports whether it was the last member (the caller
// releases the lease).
func (p *sharedLease) leave(f *Follower) bool {
	sharedLeases.mu.Lock()
	defer sharedLeases.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.members, f)
	if len(p.members) > 0 {
		return false
	}
	if sharedLeases.m[p.key] == p {
		delete(sharedLeases.m, p.key)
	}
	return true
}

// on converts a time of p's clock to f's.
func (p *sharedLease) on(f *Follower, t int64) int64 { return t + int64(p.base.Sub(f.base)) }

// renew renews the shared lease for member f when it is due (or force),
// and gives f the lease as held: f.lease, f.renewSent (the last renewal's,
// whichever member made it) and f.renewedHeld (no take since f's last
// renewal). Called with f.mu held.
func (p *sharedLease) renew(ctx context.Context, f *Follower, force bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := shardstate.Lease{Router: p.router, Database: f.db, Version: -1, RenewedAt: time.Now()}
	ri := time.Duration(0)
	for m := range p.members {
		if v := m.acked.Load(); l.Version < 0 || v < l.Version {
			l.Version = v
		}
		if s := m.state.Load(); s != nil && (l.Epoch == 0 || s.Epoch < l.Epoch) {
			l.Epoch = s.Epoch
		}
		l.ValidFor = max(l.ValidFor, m.opts.LeaseDuration)
		l.HoldFor = max(l.HoldFor, m.opts.holdFor())
		if ri == 0 || m.opts.RenewInterval < ri {
			ri = m.opts.RenewInterval
		}
	}
	now := int64(time.Since(p.base))
	if p.lease != nil && !force && p.lease.Version == l.Version && now-p.sent < int64(ri) {
		f.lease, f.renewSent, f.renewedHeld = p.lease, p.on(f, p.sent), f.gen == p.gen
		f.gen = p.gen
		return nil
	}
	took := p.lease == nil
	if p.lease != nil {
		l.ETag = p.lease.ETag
	}
	lease, err := shardstate.RenewLease(ctx, f.st, l)
	if errors.Is(err, shardstate.ErrLeaseLost) {
		took, l.ETag = true, ""
		lease, err = shardstate.RenewLease(ctx, f.st, l)
	}
	if err != nil {
		p.lease, f.lease = nil, nil
		f.lastErr.Store(&err)
		return err
	}
	if took {
		p.gen++
		p.takenAt = int64(time.Since(p.base))
	}
	p.lease, p.sent = lease, now
	f.lease, f.renewSent, f.renewedHeld = lease, p.on(f, now), !took && f.gen == p.gen
	f.gen = p.gen
	f.lastErr.Store(nil)
	return nil
}

// readAfterTake reports whether a state read f sent at readSent (f's
// clock) was sent after the lease in force was taken: only such a read
// lets f write (a read before it may predate a change whose wait did not
// see the lease).
func (p *sharedLease) readAfterTake(f *Follower, readSent int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lease != nil && readSent >= p.on(f, p.takenAt)
}
