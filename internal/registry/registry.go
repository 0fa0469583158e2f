package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/abacusdb/abacus/driver"
)

// Registry caches records of one kind. R is the store's form of a record
// (driver.Namespace), T the form callers use. Records never
// change once created, so a cached record is never stale; one that was
// never seen is read from the store.
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

	cache sync.Map // name -> *T
}

// Lookup returns the named record, from the cache or the store.
func (g *Registry[R, T]) Lookup(ctx context.Context, name string) (*T, error) {
	if v, ok := g.cache.Load(name); ok {
		return v.(*T), nil
	}
	if err := g.Validate(name); err != nil {
		return nil, err
	}
	r, err := g.Read(ctx, name)
	if errors.Is(err, driver.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", g.NotFound, name)
	}
	if err != nil {
		return nil, err
	}
	t, err := g.Decode(r)
	if err != nil {
		return nil, err
	}
	v, _ := g.cache.LoadOrStore(name, t)
	return v.(*T), nil
}

// Forget drops name from the cache, so its next Lookup reads the store: a
// record that was deleted and made again is not the one cached.
func (g *Registry[R, T]) Forget(name string) { g.cache.Delete(name) }

// Cached returns the named record if it is in the cache, without asking
// the store.
func (g *Registry[R, T]) Cached(name string) (*T, bool) {
	v, ok := g.cache.Load(name)
	if !ok {
		return nil, false
	}
	return v.(*T), true
}

// Create stores r with create and returns it decoded and cached. A
// driver.ErrExists becomes Exists; other errors go through storeError.
func (g *Registry[R, T]) Create(name string, r *R, create func() error, storeError func(error) error) (*T, error) {
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
	g.cache.Store(name, t)
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
