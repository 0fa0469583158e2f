package lifecycle

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/abacusdb/abacus/clock"
)

// Cache keeps one View per namespace and decides when to read it again.
// A view is used for at most Refresh after its read started; an operation
// that finds it older waits for a new read, and one that finds it older
// than half of Refresh starts that read in the background, so namespaces
// in steady use rarely wait. Reading a fresh view takes no lock.
type Cache struct {
	// Refresh is how long a view is trusted. Every cut is set more than
	// this far in the future, which is what makes a cut known to every
	// process before it takes effect.
	Refresh time.Duration
	Clock   clock.Clock
	// Load reads a namespace's view; readAt is when the read started.
	Load func(ctx context.Context, namespace string, readAt time.Time) (*View, error)
	// LoadTimeout bounds each read. A read is shared by every operation
	// waiting for it, so it runs on its own deadline, never on the context
	// of the operation that happened to start it.
	LoadTimeout time.Duration

	slots sync.Map // namespace -> *slot
}

type slot struct {
	view atomic.Pointer[View]

	mu sync.Mutex
	// epoch counts Forgets: a read started before one is neither published
	// nor joined after it.
	epoch uint64
	// loading is the read in progress of the current epoch, nil when none
	// is; written under mu, read without it by Get's fast path, so that
	// operations arriving while a background read runs take no lock.
	loading atomic.Pointer[load]
}

// load is one read of a view, shared by the operations waiting for it.
type load struct {
	epoch uint64
	done  chan struct{} // closed when the read ends
	err   error         // set before done is closed
}

// Get returns a view of namespace and an instant, now, at which the view is
// trusted, reading it first if the one held is too old (or absent). An
// operation takes its generations at now, never later: that is what the
// argument needs. A failed read is returned as it is: nothing may be done
// on the namespace without a trusted view.
func (c *Cache) Get(ctx context.Context, namespace string) (*View, time.Time, error) {
	s := c.slot(namespace)
	for {
		now := c.Clock.Now()
		if v := s.view.Load(); v != nil && now.Before(v.ReadAt.Add(c.Refresh)) {
			if !now.Before(v.ReadAt.Add(c.Refresh/2)) && s.loading.Load() == nil {
				c.start(context.Background(), namespace, s)
			}
			return v, now, nil
		}
		l := c.start(ctx, namespace, s)
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		}
		if v, now := s.view.Load(), c.Clock.Now(); v != nil && now.Before(v.ReadAt.Add(c.Refresh)) {
			return v, now, nil
		}
		if l.err != nil {
			return nil, time.Time{}, l.err
		}
		// The view read is already too old (a read slower than Refresh),
		// or was forgotten meanwhile: read again rather than trust it.
	}
}

// Forget drops what is known of namespace, so its next operation reads
// the view again; a process calls it after it records a cut itself, and
// when the namespace record it holds turns out to be stale. A read
// already under way is then neither used nor waited for.
func (c *Cache) Forget(namespace string) {
	v, ok := c.slots.Load(namespace)
	if !ok {
		return
	}
	s := v.(*slot)
	s.mu.Lock()
	s.epoch++
	s.loading.Store(nil)
	s.view.Store(nil)
	s.mu.Unlock()
}

func (c *Cache) slot(namespace string) *slot {
	if s, ok := c.slots.Load(namespace); ok {
		return s.(*slot)
	}
	s, _ := c.slots.LoadOrStore(namespace, &slot{})
	return s.(*slot)
}

// start returns the read of the current epoch in progress, starting one
// if there is none.
func (c *Cache) start(ctx context.Context, namespace string, s *slot) *load {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.loading.Load(); l != nil {
		return l
	}
	l := &load{epoch: s.epoch, done: make(chan struct{})}
	s.loading.Store(l)
	go c.read(context.WithoutCancel(ctx), namespace, s, l)
	return l
}

// read reads the view, within LoadTimeout, and publishes it unless the
// slot was forgotten since the read began or a view read later is already
// there.
func (c *Cache) read(ctx context.Context, namespace string, s *slot, l *load) {
	if c.LoadTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.LoadTimeout)
		defer cancel()
	}
	readAt := c.Clock.Now()
	v, err := c.Load(ctx, namespace, readAt)
	s.mu.Lock()
	if err == nil && s.epoch == l.epoch {
		v.ReadAt = readAt
		if old := s.view.Load(); old == nil || !old.ReadAt.After(readAt) {
			s.view.Store(v)
		}
	}
	s.loading.CompareAndSwap(l, nil)
	l.err = err
	s.mu.Unlock()
	close(l.done)
}
