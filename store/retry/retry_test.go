package retry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/storecap/storecaptest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

var ctx = context.Background()

const coll = "dbs/app/colls/c"

// TestCapabilities: the wrapper offers each optional capability of package
// store exactly when the wrapped store does. The capabilities are read
// from store/capabilities.go, so one added there and not wired here fails.
func TestCapabilities(t *testing.T) {
	mem := memstore.New(nil)
	t.Cleanup(func() { _ = mem.Close() })
	storecaptest.Check(t, storecaptest.Wrapper{Package: "retry", Type: "Store", Capabilities: filepath.Join("..", "capabilities.go"),
		Generated: "capabilities_gen.go", Names: capabilityNames, Wrap: func(st store.Store) store.Store { return Wrap(st, nil) }}, mem)
}

func TestRetryable(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name       string
		err        error
		repeatable bool
		want       bool
	}{
		{"success", nil, true, false},
		{"throttled, repeatable", &store.Error{Kind: store.ErrThrottled}, true, true},
		{"throttled, not repeatable: the service did not apply it", &store.Error{Kind: store.ErrThrottled}, false, true},
		{"refused connection, not repeatable: never sent", &store.Error{Kind: store.ErrUnavailable, Err: dial}, false, true},
		{"a dial error wrapped by fmt", fmt.Errorf("post: %w", dial), false, true},
		{"reset connection, repeatable", &store.Error{Kind: store.ErrUnavailable, Err: reset}, true, true},
		{"reset connection, not repeatable: outcome unknown", &store.Error{Kind: store.ErrUnavailable, Err: reset}, false, false},
		{"503, repeatable", &store.Error{Kind: store.ErrUnavailable, Status: 503}, true, true},
		{"503, not repeatable", &store.Error{Kind: store.ErrUnavailable, Status: 503}, false, false},
		{"a closed store", &store.Error{Kind: store.ErrClosed}, true, false},
		{"not found", &store.Error{Kind: store.ErrNotFound}, true, false},
		{"conflict", &store.Error{Kind: store.ErrConflict}, true, false},
		{"precondition", &store.Error{Kind: store.ErrPreconditionFailed}, true, false},
		{"fenced", &store.Error{Kind: store.ErrFenced}, true, false},
		{"quota", &store.Error{Kind: store.ErrQuotaExceeded}, true, false},
		{"bad request", &store.Error{Kind: store.ErrBadRequest}, true, false},
		{"canceled", context.Canceled, true, false},
		{"deadline while throttled", fmt.Errorf("%w: %w", context.DeadlineExceeded, store.ErrThrottled), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Retryable(tc.err, tc.repeatable))
		})
	}
}

func TestBackoff(t *testing.T) {
	p := Policy{}.WithDefaults()
	assert.Equal(t, Policy{MaxAttempts: 9, MaxWait: 30 * time.Second, DefaultWait: 100 * time.Millisecond, MaxBackoff: time.Second}, p)
	for n, full := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		full *= time.Millisecond
		for range 20 {
			w := p.Backoff(n + 1)
			assert.GreaterOrEqual(t, w, full/2, "retry %d", n+1)
			assert.LessOrEqual(t, w, full, "retry %d", n+1)
		}
	}
	throttled := &store.Error{Kind: store.ErrThrottled, RetryAfter: 7 * time.Millisecond}
	w, ok := p.Next(1, 0, throttled, false)
	assert.True(t, ok)
	assert.Equal(t, 7*time.Millisecond, w, "the store's retry-after, as given")
	_, ok = p.Next(9, 0, throttled, false)
	assert.False(t, ok, "MaxAttempts")
	_, ok = p.Next(1, p.MaxWait-time.Millisecond, throttled, false)
	assert.False(t, ok, "MaxWait")
}

// script is a store whose document calls fail with the errors of fail, in
// turn, then succeed; it counts the calls and remembers their contexts.
type script struct {
	store.Store
	fail  []error
	calls atomic.Int32
	ctxs  []context.Context
}

func (s *script) next(ctx context.Context) error {
	n := int(s.calls.Add(1)) - 1
	s.ctxs = append(s.ctxs, ctx)
	if n < len(s.fail) {
		return s.fail[n]
	}
	return nil
}

func (s *script) Create(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	if err := s.next(ctx); err != nil {
		return nil, err
	}
	return &store.Document{ID: "x"}, nil
}

func (s *script) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	if err := s.next(ctx); err != nil {
		return nil, err
	}
	return &store.Document{ID: id}, nil
}

func (s *script) Delete(ctx context.Context, l, id string, o *store.WriteOptions) error {
	return s.next(ctx)
}

func TestCalls(t *testing.T) {
	throttled := &store.Error{Kind: store.ErrThrottled, RetryAfter: time.Millisecond}
	unknown := &store.Error{Kind: store.ErrUnavailable, Status: 503}
	fast := &Options{Policy: Policy{MaxAttempts: 4, DefaultWait: time.Millisecond}}
	for _, tc := range []struct {
		name  string
		fail  []error
		call  func(s store.Store) error
		calls int32
		ok    bool
	}{
		{"a read retried through unknown outcomes", []error{unknown, unknown}, func(s store.Store) error {
			_, err := s.Read(ctx, coll, "x", nil)
			return err
		}, 3, true},
		{"a create retried when throttled", []error{throttled, throttled}, func(s store.Store) error {
			_, err := s.Create(ctx, coll, nil, nil)
			return err
		}, 3, true},
		{"a create not retried after an unknown outcome", []error{unknown}, func(s store.Store) error {
			_, err := s.Create(ctx, coll, nil, nil)
			return err
		}, 1, false},
		{"a create marked Repeatable is", []error{unknown}, func(s store.Store) error {
			_, err := s.Create(Repeatable(ctx), coll, nil, nil)
			return err
		}, 2, true},
		{"an unconditional delete is not", []error{unknown}, func(s store.Store) error {
			return s.Delete(ctx, coll, "x", nil)
		}, 1, false},
		{"a conditional delete is", []error{unknown}, func(s store.Store) error {
			return s.Delete(ctx, coll, "x", &store.WriteOptions{IfMatch: `"e"`})
		}, 2, true},
		{"bounded by MaxAttempts", []error{unknown, unknown, unknown, unknown, unknown}, func(s store.Store) error {
			_, err := s.Read(ctx, coll, "x", nil)
			return err
		}, 4, false},
		{"a refusal is final", []error{&store.Error{Kind: store.ErrNotFound}}, func(s store.Store) error {
			_, err := s.Read(ctx, coll, "x", nil)
			return err
		}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &script{fail: tc.fail}
			err := tc.call(Wrap(sc, fast))
			assert.Equal(t, tc.calls, sc.calls.Load())
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.fail[0], "the store's error is kept")
			if tc.calls > 1 {
				assert.ErrorContains(t, err, fmt.Sprintf("failed %d times", tc.calls))
			}
		})
	}
}

type spanKey struct{}

// TestHooks: every attempt is opened in Span and reported to Call with the
// context Span returned, which is the context the store receives; each
// retry is reported to Retry.
func TestHooks(t *testing.T) {
	throttled := &store.Error{Kind: store.ErrThrottled, RetryAfter: time.Millisecond}
	sc := &script{fail: []error{throttled}}
	var spans, ends, calls, retries atomic.Int32
	var callCtx []context.Context
	st := Wrap(sc, &Options{Hooks: Hooks{
		Span: func(ctx context.Context, l, op string) (context.Context, func(error)) {
			n := spans.Add(1)
			assert.Equal(t, "read", op)
			return context.WithValue(ctx, spanKey{}, n), func(error) { ends.Add(1) }
		},
		Call: func(ctx context.Context, l, op string, _ time.Duration, err error) {
			calls.Add(1)
			callCtx = append(callCtx, ctx)
		},
		Retry: func(ctx context.Context, l, op string, attempt int, wait time.Duration, err error) {
			retries.Add(1)
			assert.Equal(t, 1, attempt)
			assert.Equal(t, time.Millisecond, wait)
			assert.ErrorIs(t, err, store.ErrThrottled)
			assert.Nil(t, ctx.Value(spanKey{}), "the caller's context, outside any attempt's span")
		},
	}})
	_, err := st.Read(ctx, coll, "x", nil)
	require.NoError(t, err)
	assert.EqualValues(t, 2, spans.Load())
	assert.EqualValues(t, 2, ends.Load())
	assert.EqualValues(t, 2, calls.Load())
	assert.EqualValues(t, 1, retries.Load())
	require.Len(t, sc.ctxs, 2)
	for i, c := range sc.ctxs {
		assert.Equal(t, int32(i+1), c.Value(spanKey{}), "attempt %d runs with its span's context", i+1)
		assert.Same(t, c, callCtx[i], "and Call receives it")
	}
}

func TestContextEndsTheWait(t *testing.T) {
	sc := &script{fail: []error{&store.Error{Kind: store.ErrThrottled, RetryAfter: time.Hour}}}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err := Wrap(sc, &Options{Policy: Policy{MaxWait: 2 * time.Hour}}).Read(short, coll, "x", nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, store.ErrThrottled)
	assert.EqualValues(t, 1, sc.calls.Load())
	assert.False(t, errors.Is(err, context.Canceled))
}

// TestEnsure: a store already under a retry layer is used as it is (one
// layer, not two); another is wrapped.
func TestEnsure(t *testing.T) {
	sc := &script{fail: []error{&store.Error{Kind: store.ErrThrottled, RetryAfter: time.Millisecond}}}
	w := Wrap(sc, &Options{Policy: Policy{MaxAttempts: 1}})
	assert.Same(t, w, Ensure(w))
	s := New(sc, nil)
	assert.Same(t, s, Ensure(s))
	_, err := Ensure(w).Read(ctx, coll, "x", nil)
	assert.ErrorIs(t, err, store.ErrThrottled, "the caller's policy (one attempt), not a second layer's")
	assert.EqualValues(t, 1, sc.calls.Load())

	e := Ensure(sc)
	_, ok := e.(layer)
	assert.True(t, ok)
	_, err = e.Read(ctx, coll, "x", nil)
	require.NoError(t, err, "a raw store gets the default policy")
}

// TestGuard: a guarded call asks its check before each retry, never before
// the first attempt, and stops the retries on the first refusal: with a
// check that refuses from its third asking on, exactly three attempts are
// made, and the error carries the refusal and the last attempt's failure.
func TestGuard(t *testing.T) {
	throttled := &store.Error{Kind: store.ErrThrottled, RetryAfter: time.Millisecond}
	sc := &script{fail: []error{throttled, throttled, throttled, throttled, throttled}}
	refused := errors.New("lease lapsed")
	var asked atomic.Int32
	g := Guard(ctx, func() error {
		if asked.Add(1) >= 3 {
			return refused
		}
		return nil
	})
	_, err := Wrap(sc, nil).Read(g, coll, "x", nil)
	assert.ErrorIs(t, err, refused)
	assert.ErrorIs(t, err, store.ErrThrottled)
	assert.EqualValues(t, 3, sc.calls.Load(), "the first attempt and the two the check allowed")
	assert.EqualValues(t, 3, asked.Load(), "asked before each retry only")

	sc = &script{fail: []error{throttled}}
	_, err = Wrap(sc, nil).Read(Guard(ctx, func() error { return refused }), coll, "x", nil)
	assert.ErrorIs(t, err, refused, "a refusal before the first retry")
	assert.EqualValues(t, 1, sc.calls.Load())
}
