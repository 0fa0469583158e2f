package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Registry caches records of one kind. R is the store's form of a record
// (driver.Namespace, driver.Queue), T the form callers use. A record that
// was never seen is read from the store. With Refresh zero a cached record
// is kept for good (namespaces never change once created); otherwise it is
// trusted for Refresh after the read that found it began, and read again
// after that (a queue can be deleted).
type Registry[R, T any] struct {
	// NotFound and Exists are the outcome errors of this kind, wrapped
	// with the name.
	NotFound, Exists error
	// Validate refuses a malformed name before any read.
	Validate func(name string) error
	// Read reads a record; it returns driver.ErrNotFound when there is none.
	Read func(ctx context.Context, name string) (*R, error)
	// Decode checks a stored record and converts it.
	Decode func(r *R) (*T, error)
	// Refresh is how long a cached record is trusted; zero: for good.
	// Measured in real time.
	Refresh time.Duration

	cache sync.Map // name -> *entry[T]

	mu       sync.Mutex
	inflight map[string]*read[T]
}

// entry is a cached record; t nil marks the name as not known (a record
// deleted, or found missing), so that a read that began earlier cannot
// bring back what it found.
type entry[T any] struct {
	t     *T
	began time.Time // when the read (or write) that learnt t began
}

// read is one store read of a name that concurrent lookups share.
type read[T any] struct {
	began time.Time
	done  chan struct{}
	t     *T
	err   error
}

// readTimeout bounds a shared read, which runs on a context of its own.
const readTimeout = time.Minute

// Lookup returns the named record, from the cache or the store.
func (g *Registry[R, T]) Lookup(ctx context.Context, name string) (*T, error) {
	if v, ok := g.cache.Load(name); ok {
		e := v.(*entry[T])
		if e.t != nil && (g.Refresh <= 0 || time.Since(e.began) < g.Refresh) {
			return e.t, nil
		}
	}
	if err := g.Validate(name); err != nil {
		return nil, err
	}
	return g.shared(ctx, name)
}

// shared reads name from the store, joining a read of it already under
// way, so that a busy name costs one read a refresh, not one per caller.
// Only a read that began less than a refresh ago is joined: one that
// began earlier might miss a change the caller must see.
func (g *Registry[R, T]) shared(ctx context.Context, name string) (*T, error) {
	g.mu.Lock()
	rd := g.inflight[name]
	if rd == nil || (g.Refresh > 0 && time.Since(rd.began) >= g.Refresh) || g.Refresh < 0 {
		rd = &read[T]{began: time.Now(), done: make(chan struct{})}
		if g.inflight == nil {
			g.inflight = map[string]*read[T]{}
		}
		g.inflight[name] = rd
		// The read runs on its own context: a caller that gives up must
		// not fail the others waiting on it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		go func() {
			defer cancel()
			defer func() {
				if p := recover(); p != nil {
					rd.t, rd.err = nil, fmt.Errorf("reading %q: panic: %v", name, p)
				}
				g.mu.Lock()
				if g.inflight[name] == rd {
					delete(g.inflight, name)
				}
				g.mu.Unlock()
				close(rd.done)
			}()
			rd.t, rd.err = g.read(rctx, name, rd.began)
		}()
	}
	g.mu.Unlock()
	select {
	case <-rd.done:
		return rd.t, rd.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *Registry[R, T]) read(ctx context.Context, name string, began time.Time) (*T, error) {
	r, err := g.Read(ctx, name)
	if errors.Is(err, driver.ErrNotFound) {
		// A record cached for the name is gone; an unknown name is not
		// remembered (any name may be asked for).
		if _, ok := g.cache.Load(name); ok {
			g.remember(name, nil, began)
		}
		return nil, fmt.Errorf("%w: %q", g.NotFound, name)
	}
	if err != nil {
		return nil, err
	}
	t, err := g.Decode(r)
	if err != nil {
		return nil, err
	}
	g.remember(name, t, began)
	return t, nil
}

// remember caches t (nil: the name is not known), learnt by an operation
// that began at began, unless what a later operation learnt is cached
// already.
func (g *Registry[R, T]) remember(name string, t *T, began time.Time) {
	e := &entry[T]{t: t, began: began}
	for {
		v, loaded := g.cache.LoadOrStore(name, e)
		if !loaded {
			return
		}
		if !v.(*entry[T]).began.Before(began) || g.cache.CompareAndSwap(name, v, e) {
			return
		}
	}
}

// Forget drops name's record from the cache, so its next Lookup reads the
// store (a record deleted, perhaps to be made again), and keeps a read
// that began before the call from caching what it found.
func (g *Registry[R, T]) Forget(name string) { g.remember(name, nil, time.Now()) }

// Cached returns the named record if it is in the cache, without asking
// the store.
func (g *Registry[R, T]) Cached(name string) (*T, bool) {
	v, ok := g.cache.Load(name)
	if !ok || v.(*entry[T]).t == nil {
		return nil, false
	}
	return v.(*entry[T]).t, true
}

// Create stores r with create and returns it decoded and cached. A
// driver.ErrExists becomes Exists; other errors go through storeError.
func (g *Registry[R, T]) Create(name string, r *R, create func() error, storeError func(error) error) (*T, error) {
	began := time.Now()
	if err := create(); err != nil {
		if errors.Is(err, driver.ErrExists) {
			return nil, fmt.Errorf("%w: %q", g.Exists, name)
		}
		return nil, storeError(err)
	}
	t, err := g.Decode(r)
	if err != nil {
		return nil, err
	}
	g.remember(name, t, began)
	return t, nil
}

// Existing is what a create refused for its new name answers: Exists when
// a record of that name is stored already (named before the rule for new
// names; creating it said "exists" then, and must still), else refusal.
func (g *Registry[R, T]) Existing(ctx context.Context, name string, refusal error) error {
	if _, err := g.Lookup(ctx, name); err == nil {
		return fmt.Errorf("%w: %q", g.Exists, name)
	}
	return refusal
}
