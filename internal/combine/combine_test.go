package combine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// fakeStore records the writes it is sent; One blocks on gate while it is
// set. A unit test of the combiner's own rules: the stores' behaviour
// under it is tested through the engines, on the real stores.
type fakeStore struct {
	mu      sync.Mutex
	gate    chan struct{}
	started chan struct{} // closed when the first One call arrives
	sent    []string
	manyErr error
}

func (f *fakeStore) one(_ context.Context, p *string) error {
	f.mu.Lock()
	gate, started := f.gate, f.started
	f.started = nil
	f.mu.Unlock()
	if started != nil {
		close(started)
	}
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, *p)
	return nil
}

func (f *fakeStore) many(_ context.Context, ps []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.manyErr != nil {
		return f.manyErr
	}
	f.sent = append(f.sent, ps...)
	return nil
}

func newCombiner(f *fakeStore, timeout time.Duration) *Combiner[string] {
	return &Combiner[string]{
		Start:   func(fn func()) bool { go fn(); return true },
		Timeout: timeout, MaxWrites: 8, MaxBytes: 1 << 10, MaxInflight: 1,
		Size:  func(p *string) int { return len(*p) },
		Level: func(*string) driver.Consistency { return driver.Quorum },
		One:   f.one,
		Many:  f.many,
	}
}

// waitQueued waits until n writes wait for a request.
func waitQueued(t *testing.T, c *Combiner[string], n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); c.Queued() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", c.Queued(), n)
		}
	}
}

// A write that waits out its timeout in the queue is never sent, and its
// caller hears of it as timed out.
func TestAWriteQueuedPastItsTimeoutIsNeverSent(t *testing.T) {
	f := &fakeStore{gate: make(chan struct{}), started: make(chan struct{})}
	started := f.started
	c := newCombiner(f, 50*time.Millisecond)
	lead := make(chan error, 1)
	go func() { lead <- c.Write(context.Background(), "lead") }()
	<-started
	if err := c.Write(context.Background(), "late"); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("a write queued past its timeout: %v, want ErrTimedOut", err)
	}
	if n := c.Queued(); n != 1 {
		t.Fatalf("%d writes queued behind the held one, want the late one", n)
	}
	close(f.gate)
	<-lead
	// The send loop has ended, so it has dealt with the late write.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		running := c.inflight
		c.mu.Unlock()
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the send loop never ended")
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sent {
		if s == "late" {
			t.Fatalf("the store got %v: a write past its timeout was sent", f.sent)
		}
	}
}

// A request of several writes that fails before its deadline is sent
// again write by write, and each write gets the answer of its own send; a
// failure then is of unknown outcome, never "unavailable" (the failed
// request may have carried the write).
func TestAFailedRequestIsSentAgainAlone(t *testing.T) {
	f := &fakeStore{gate: make(chan struct{}), started: make(chan struct{}), manyErr: fmt.Errorf("%w: injected", driver.ErrUnavailable)}
	started := f.started
	c := newCombiner(f, time.Second)
	go func() { _ = c.Write(context.Background(), "lead") }()
	<-started
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = c.Write(context.Background(), fmt.Sprint("w", i)) })
	}
	waitQueued(t, c, 3) // so they go out in one request, which fails
	close(f.gate)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d, sent again alone after its request failed: %v, want success", i, err)
		}
	}
	if err := afterFailedRequest(fmt.Errorf("%w: refused", driver.ErrUnavailable), f.manyErr); !errors.Is(err, driver.ErrUnknownOutcome) || errors.Is(err, driver.ErrUnavailable) {
		t.Fatalf("afterFailedRequest = %v, want unknown outcome without unavailable", err)
	}
}

// A caller whose context is already done queues nothing.
func TestADoneContextQueuesNothing(t *testing.T) {
	f := &fakeStore{}
	c := newCombiner(f, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Write(ctx, "never"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write with a done context: %v", err)
	}
	time.Sleep(10 * time.Millisecond)
	if len(f.sent) != 0 {
		t.Fatalf("sent %v", f.sent)
	}
}
