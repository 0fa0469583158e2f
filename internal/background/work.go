package background

import (
	"context"
	"sync"
)

// Work is the work of one engine in flight. The zero value is open.
type Work struct {
	mu     sync.RWMutex
	closed bool
	wg     sync.WaitGroup
}

// Enter registers one piece of work, unless the group is closed; the
// caller calls Leave when it is done.
func (g *Work) Enter() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

// Leave ends a piece of work registered by Enter.
func (g *Work) Leave() { g.wg.Done() }

// Go runs fn in a goroutine that Wait waits for, unless the group is
// closed, in which case it runs nothing and reports false.
func (g *Work) Go(fn func()) bool {
	if !g.Enter() {
		return false
	}
	go func() {
		defer g.Leave()
		fn()
	}()
	return true
}

// Close refuses new work from now on. Work already entered goes on.
func (g *Work) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// Wait waits until all entered work has left, or ctx ends.
func (g *Work) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
