package refreshcache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
)

// value is what the test loads: when its read began.
type value struct{ ReadAt time.Time }

type loads struct {
	n    atomic.Int64
	fail atomic.Bool
	gate chan struct{} // when set, each load waits for it
}

func (l *loads) load(ctx context.Context, _ string, readAt time.Time) (*value, error) {
	if l.gate != nil {
		select {
		case <-l.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	l.n.Add(1)
	if l.fail.Load() {
		return nil, errors.New("store down")
	}
	return &value{ReadAt: readAt}, nil
}

// newTestCache is a cache with a 10 s refresh on a manual clock, reading
// through l (whose loads wait for gate, when not nil).
func newTestCache(gate chan struct{}) (*clock.Manual, *loads, *Cache[value]) {
	clk := clock.NewManual(time.Unix(1000, 0))
	l := &loads{gate: gate}
	return clk, l, &Cache[value]{Refresh: 10 * time.Second, Clock: clk, Load: l.load}
}

func TestValuesAreTrustedForOneRefresh(t *testing.T) {
	t.Parallel()
	clk, l, c := newTestCache(nil)
	ctx := context.Background()
	v1, _, err := c.Get(ctx, "ns")
	if err != nil || l.n.Load() != 1 {
		t.Fatalf("first Get: %v, %d loads", err, l.n.Load())
	}
	clk.Advance(4 * time.Second)
	if v, _, _ := c.Get(ctx, "ns"); v != v1 || l.n.Load() != 1 {
		t.Fatalf("Get within half a refresh read again (%d loads)", l.n.Load())
	}
	// A view too old is never returned, even when reading it again fails.
	clk.Advance(6 * time.Second)
	l.fail.Store(true)
	if v, _, err := c.Get(ctx, "ns"); err == nil {
		t.Fatalf("Get at the end of the refresh returned %+v, not the failure of the read", v)
	}
	l.fail.Store(false)
	v2, _, err := c.Get(ctx, "ns")
	if err != nil || v2 == v1 || !v2.ReadAt.Equal(clk.Now()) {
		t.Fatalf("Get after a failed read: %+v, %v", v2, err)
	}
}

// Past half the refresh, a Get returns the view it has and reads a new one
// in the background.
func TestValuesAreReadAgainInTheBackground(t *testing.T) {
	t.Parallel()
	clk, l, c := newTestCache(nil)
	ctx := context.Background()
	v1, _, _ := c.Get(ctx, "ns")
	clk.Advance(6 * time.Second)
	if v, _, _ := c.Get(ctx, "ns"); v != v1 {
		t.Fatal("Get past half the refresh did not return the view it had")
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.n.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no background read")
		}
		time.Sleep(time.Millisecond)
	}
	for {
		if v, _, _ := c.Get(ctx, "ns"); v != v1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background read's view was not used")
		}
		time.Sleep(time.Millisecond)
	}
}

// Many Gets of a namespace without a view share one read.
func TestConcurrentGetsShareOneRead(t *testing.T) {
	t.Parallel()
	_, l, c := newTestCache(make(chan struct{}))
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, _, err := c.Get(context.Background(), "ns"); err != nil {
				t.Error(err)
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	close(l.gate)
	wg.Wait()
	if n := l.n.Load(); n != 1 {
		t.Fatalf("%d reads for 20 concurrent Gets, want 1", n)
	}
}

func TestForgetReadsAgain(t *testing.T) {
	t.Parallel()
	_, l, c := newTestCache(nil)
	ctx := context.Background()
	_, _, _ = c.Get(ctx, "ns")
	c.Forget("ns")
	c.Forget("never-read")
	_, _, _ = c.Get(ctx, "ns")
	if n := l.n.Load(); n != 2 {
		t.Fatalf("%d reads, want 2 (Forget must drop the view)", n)
	}
}

// A read is shared: the caller that started it going away does not fail
// the others waiting for it.
func TestACancelledCallerDoesNotFailTheRead(t *testing.T) {
	t.Parallel()
	_, l, c := newTestCache(make(chan struct{}))
	first, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { _, _, err := c.Get(first, "ns"); errs <- err }()
	time.Sleep(20 * time.Millisecond) // the first Get starts the read
	go func() { _, _, err := c.Get(context.Background(), "ns"); errs <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled caller got %v", err)
	}
	close(l.gate)
	if err := <-errs; err != nil {
		t.Fatalf("the caller still waiting got %v, want the view", err)
	}
}

// A read under way when the view is forgotten is neither used nor waited
// for: the next Get reads again, and gets that read's view.
func TestForgetOutlivesAReadUnderWay(t *testing.T) {
	t.Parallel()
	clk, l, c := newTestCache(make(chan struct{}))
	ctx := context.Background()
	first := make(chan *value, 1)
	go func() { v, _, _ := c.Get(ctx, "ns"); first <- v }()
	time.Sleep(20 * time.Millisecond) // the first read is under way, at the gate
	clk.Advance(time.Second)
	c.Forget("ns")
	second := make(chan *value, 1)
	go func() { v, _, _ := c.Get(ctx, "ns"); second <- v }()
	time.Sleep(20 * time.Millisecond)
	close(l.gate)
	if v := <-second; v == nil || !v.ReadAt.Equal(clk.Now()) {
		t.Fatalf("the Get after Forget got a view read at %v, want one read after the Forget (%v)", v.ReadAt, clk.Now())
	}
	if v := <-first; v == nil || !v.ReadAt.Equal(clk.Now()) {
		t.Fatalf("the Get before Forget got a view read at %v; the forgotten read's view must not be used", v.ReadAt)
	}
}

// BenchmarkGetWhileRefreshing measures Get on a view past half its
// refresh while its background read is under way (the store is slow): the
// state every busy namespace passes through every LifecycleRefresh/2.
func BenchmarkGetWhileRefreshing(b *testing.B) {
	clk, l, c := newTestCache(nil)
	ctx := context.Background()
	if _, _, err := c.Get(ctx, "ns"); err != nil {
		b.Fatal(err)
	}
	l.gate = make(chan struct{}) // the next read waits
	defer close(l.gate)
	clk.Advance(6 * time.Second)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := c.Get(ctx, "ns"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// With no refresh, every Get reads, and uses only what a read that began
// after it found: what "read before every use" asks for.
func TestNoRefreshReadsForEveryGet(t *testing.T) {
	t.Parallel()
	clk, l, c := newTestCache(nil)
	c.Refresh = 0
	for i := range 3 {
		clk.Advance(time.Millisecond)
		v, _, err := c.Get(context.Background(), "k")
		if err != nil || !v.ReadAt.Equal(clk.Now()) || l.n.Load() != int64(i+1) {
			t.Fatalf("Get %d: %+v, %v after %d reads; want a value read for it", i, v, err, l.n.Load())
		}
	}
}

// A failed read is not kept, nor is the key: a key only ever asked for in
// vain (an unknown name) leaves nothing behind. A failed read does not
// take away a value still trusted.
func TestFailedReadsAreNotKept(t *testing.T) {
	t.Parallel()
	clk, l, c := newTestCache(nil)
	l.fail.Store(true)
	for range 2 {
		if _, _, err := c.Get(context.Background(), "unknown"); err == nil {
			t.Fatal("a failed read answered a value")
		}
	}
	if n := l.n.Load(); n != 2 {
		t.Fatalf("two Gets of a key that fails made %d reads, want 2", n)
	}
	if _, ok := c.slots.Load("unknown"); ok {
		t.Fatal("a key asked for in vain is still held")
	}
	l.fail.Store(false)
	v1, _, err := c.Get(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	l.fail.Store(true)
	clk.Advance(6 * time.Second) // past half the refresh: a background read starts, and fails
	if v, _, err := c.Get(context.Background(), "k"); err != nil || v != v1 {
		t.Fatalf("a trusted value: %v, %v", v, err)
	}
	for deadline := time.Now().Add(5 * time.Second); l.n.Load() < 4; {
		if time.Now().After(deadline) {
			t.Fatal("no background read")
		}
		time.Sleep(time.Millisecond)
	}
	if v, _, err := c.Get(context.Background(), "k"); err != nil || v != v1 {
		t.Fatalf("after a failed background read the still-trusted value is gone: %v, %v", v, err)
	}
}
