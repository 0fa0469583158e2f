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

	mu      sync.Mutex
	loading chan struct{} // closed when the read in progress ends; nil when none is
	err     error         // the last read's error, for those who waited on it
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
			if !now.Before(v.ReadAt.Add(c.Refresh / 2)) {
				c.refreshInBackground(namespace, s)
			}
			return v, now, nil
		}
		s.mu.Lock()
		done := s.loading
		if done == nil {
			done = make(chan struct{})
			s.loading = done
			s.mu.Unlock()
			go c.load(context.WithoutCancel(ctx), namespace, s, done)
		} else {
			s.mu.Unlock()
		}
		select {
		case <-done:
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		}
		s.mu.Lock()
		err := s.err
		s.mu.Unlock()
		if v, now := s.view.Load(), c.Clock.Now(); v != nil && now.Before(v.ReadAt.Add(c.Refresh)) {
			return v, now, nil
		}
		if err != nil {
			return nil, time.Time{}, err
		}
		// The view read is already too old (a read slower than Refresh):
		// read again rather than trust it.
	}
}

// Forget drops what is known of namespace, so its next operation reads
// the view again; a process calls it after it records a cut itself, and
// when the namespace record it holds turns out to be stale.
func (c *Cache) Forget(namespace string) {
	if s, ok := c.slots.Load(namespace); ok {
		s.(*slot).view.Store(nil)
	}
}

func (c *Cache) slot(namespace string) *slot {
	if s, ok := c.slots.Load(namespace); ok {
		return s.(*slot)
	}
	s, _ := c.slots.LoadOrStore(namespace, &slot{})
	return s.(*slot)
}

func (c *Cache) refreshInBackground(namespace string, s *slot) {
	s.mu.Lock()
	if s.loading != nil {
		s.mu.Unlock()
		return
	}
	done := make(chan struct{})
	s.loading = done
	s.mu.Unlock()
	go c.load(context.Background(), namespace, s, done)
}

// load reads the view, within LoadTimeout, and publishes it unless a view
// read later is already there.
func (c *Cache) load(ctx context.Context, namespace string, s *slot, done chan struct{}) {
	if c.LoadTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.LoadTimeout)
		defer cancel()
	}
	readAt := c.Clock.Now()
	v, err := c.Load(ctx, namespace, readAt)
	if err == nil {
		v.ReadAt = readAt
		for {
			old := s.view.Load()
			if old != nil && old.ReadAt.After(readAt) || s.view.CompareAndSwap(old, v) {
				break
			}
		}
	}
	s.mu.Lock()
	s.err = err
	s.loading = nil
	s.mu.Unlock()
	close(done)
}
