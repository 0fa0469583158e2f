package refreshcache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/abacusdb/abacus/clock"
)

// Cache keeps one value per key and decides when to read it again. A
// value is used for at most Refresh after its read started; an operation
// that finds it older waits for a new read, and one that finds it older
// than half of Refresh starts that read in the background. Reading a
// fresh value takes no lock. A read that fails is not kept: every
// operation until one succeeds reads again (an unknown key, say).
type Cache[V any] struct {
	// Refresh is how long a value is trusted after its read began. Zero
	// or negative trusts nothing: every Get reads, and uses only a value
	// whose read began after the Get did.
	Refresh time.Duration
	Clock   clock.Clock
	// Load reads a key's value; readAt is when the read started.
	Load func(ctx context.Context, key string, readAt time.Time) (*V, error)
	// LoadTimeout bounds each read. A read is shared by every operation
	// waiting for it, so it runs on its own deadline, never on the context
	// of the operation that happened to start it.
	LoadTimeout time.Duration

	slots sync.Map // key -> *slot[V]
}

// entry is a value and when the read that found it began.
type entry[V any] struct {
	v      *V
	readAt time.Time
}

type slot[V any] struct {
	value atomic.Pointer[entry[V]]

	mu sync.Mutex
	// epoch counts Forgets: a read started before one is neither published
	// nor joined after it.
	epoch uint64
	// loading is the read in progress of the current epoch, nil when none
	// is; written under mu, read without it by Get's fast path, so that
	// operations arriving while a background read runs take no lock.
	loading atomic.Pointer[load]
}

// load is one read of a value, shared by the operations waiting for it.
type load struct {
	epoch uint64
	done  chan struct{} // closed when the read ends
	err   error         // set before done is closed
}

// Get returns key's value and an instant, now, at which the value is
// trusted, reading it first if the one held is too old (or absent). An
// operation that depends on the value acts at now, never later. A failed
// read is returned as it is.
func (c *Cache[V]) Get(ctx context.Context, key string) (*V, time.Time, error) {
	s := c.slot(key)
	began := c.Clock.Now()
	for {
		now := c.Clock.Now()
		if e := s.value.Load(); e != nil && now.Before(e.readAt.Add(c.Refresh)) {
			if !now.Before(e.readAt.Add(c.Refresh/2)) && s.loading.Load() == nil {
				c.start(context.Background(), key, s)
			}
			return e.v, now, nil
		}
		l := c.start(ctx, key, s)
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		}
		if e, now := s.value.Load(), c.Clock.Now(); e != nil && (now.Before(e.readAt.Add(c.Refresh)) ||
			c.Refresh <= 0 && !e.readAt.Before(began)) {
			return e.v, now, nil
		}
		if l.err != nil {
			return nil, time.Time{}, l.err
		}
		// The value read is already too old (a read slower than Refresh),
		// or was forgotten meanwhile: read again rather than trust it.
	}
}

// Forget drops what is known of key, so its next operation reads it
// again; a process calls it after it changes what the key's value is
// read from. A read already under way is then neither used nor waited
// for.
func (c *Cache[V]) Forget(key string) {
	v, ok := c.slots.Load(key)
	if !ok {
		return
	}
	s := v.(*slot[V])
	s.mu.Lock()
	s.epoch++
	s.loading.Store(nil)
	s.value.Store(nil)
	s.mu.Unlock()
}

func (c *Cache[V]) slot(key string) *slot[V] {
	if s, ok := c.slots.Load(key); ok {
		return s.(*slot[V])
	}
	s, _ := c.slots.LoadOrStore(key, &slot[V]{})
	return s.(*slot[V])
}

// start returns the read of the current epoch in progress, starting one
// if there is none.
func (c *Cache[V]) start(ctx context.Context, key string, s *slot[V]) *load {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.loading.Load(); l != nil {
		return l
	}
	l := &load{epoch: s.epoch, done: make(chan struct{})}
	s.loading.Store(l)
	go c.read(context.WithoutCancel(ctx), key, s, l)
	return l
}

// read reads the value, within LoadTimeout, and publishes it unless the
// slot was forgotten since the read began or a value read later is
// already there. A failed read leaves a value held alone (it is trusted
// until its own time runs out), and drops a slot that holds none, so
// that keys asked for in vain (unknown names) take no memory.
func (c *Cache[V]) read(ctx context.Context, key string, s *slot[V], l *load) {
	if c.LoadTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.LoadTimeout)
		defer cancel()
	}
	readAt := c.Clock.Now()
	v, err := c.Load(ctx, key, readAt)
	s.mu.Lock()
	if err == nil && s.epoch == l.epoch {
		if old := s.value.Load(); old == nil || !old.readAt.After(readAt) {
			s.value.Store(&entry[V]{v: v, readAt: readAt})
		}
	}
	s.loading.CompareAndSwap(l, nil)
	l.err = err
	if err != nil && s.value.Load() == nil && s.loading.Load() == nil {
		c.slots.CompareAndDelete(key, s)
	}
	s.mu.Unlock()
	close(l.done)
}
