package sharded

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
)

// errRetired tells the engine that a mutator no longer takes updates and a
// new one must be born; callers never see it.
var errRetired = errors.New("mutator retired")

// round is one shard write and the updates it acknowledges.
type round struct {
	done chan struct{}
	err  error // set before done is closed
}

// mutator is one process's writer for one counter.
type mutator struct {
	e         *Engine
	target    Target
	id        string
	expiresAt int64 // µs; every write timestamp stays below it

	mu       sync.Mutex
	state    crdt.State
	applied  uint64 // updates applied to state
	durable  uint64 // updates contained in a successful write
	lastTS   int64
	retired  bool
	writers  int    // write loops running, at most Config.MaxInflightWrites
	pending  *round // collects updates for the next write
	lastUsed time.Time
}

func (e *Engine) newMutator(t Target) (*mutator, error) {
	st, err := crdt.New(t.Kind)
	if err != nil {
		return nil, err
	}
	now := e.cfg.Clock.Now()
	expiresAt := now.Add(e.cfg.Lifetime).UnixMicro()
	return &mutator{
		e:         e,
		target:    t,
		id:        ShardID(expiresAt),
		expiresAt: expiresAt,
		state:     st,
		lastUsed:  now,
	}, nil
}

// apply adds op to the state and returns the sequence number of the update
// and the round that will acknowledge it. It returns errRetired when the
// mutator is too close to its death to take updates.
func (m *mutator) apply(op crdt.Op) (uint64, *round, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.e.cfg.Clock.Now()
	if m.retired || m.expiresAt-now.UnixMicro() < m.e.cfg.RefusalMargin.Microseconds() {
		m.retired = true
		return 0, nil, errRetired
	}
	if err := m.state.Apply(op); err != nil {
		return 0, nil, err
	}
	m.applied++
	m.lastUsed = now
	return m.applied, m.schedule(false), nil
}

// schedule returns the round that will persist the current state, starting
// a writer if none is running. retry says the caller waits for an update
// applied earlier, whose write failed. Called with m.mu held.
func (m *mutator) schedule(retry bool) *round {
	if m.pending == nil {
		m.pending = &round{done: make(chan struct{})}
	}
	r := m.pending
	if m.writers < m.e.cfg.MaxInflightWrites {
		if !m.e.goBackground(m.writeLoop) {
			if m.writers == 0 {
				// The engine is closing: nothing will persist this state.
				// A new update is then not applied; one applied earlier
				// may have been carried by the write that failed.
				m.pending = nil
				r.err = fmt.Errorf("%w: the engine is shutting down", ErrNotApplied)
				if retry {
					r.err = fmt.Errorf("%w: the engine is shutting down, and the update's earlier write failed", ErrUnknownOutcome)
				}
				close(r.done)
			}
			return r
		}
		m.writers++
	}
	return r
}

// flush makes sure a write covering update seq happens, and returns the round
// to wait on; nil means it is already durable.
func (m *mutator) flush(seq uint64) *round {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.durable >= seq {
		return nil
	}
	return m.schedule(true)
}

func (m *mutator) isDurable(seq uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.durable >= seq
}

// idle reports whether the mutator has nothing unpersisted and no write in
// flight, so dropping it loses nothing.
func (m *mutator) idle() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writers == 0 && m.durable == m.applied
}

// writeLoop persists snapshots until no round is pending. Up to
// MaxInflightWrites loops run per mutator, so a hot counter is not limited to
// one write round trip at a time. That is safe because each snapshot and its
// timestamp are taken in one critical section: a higher timestamp always
// carries a newer state, and last-write-wins discards an older snapshot that
// lands late.
func (m *mutator) writeLoop() {
	for {
		m.mu.Lock()
		r := m.pending
		if r == nil {
			m.writers--
			m.mu.Unlock()
			return
		}
		m.pending = nil
		upto := m.applied
		snapshot, err := m.state.MarshalBinary()
		ts := max(m.e.cfg.Clock.Now().UnixMicro(), m.lastTS+1)
		if err == nil && ts >= m.expiresAt {
			// Only a clock jump can get here: the refusal margin keeps
			// writes far from expiry. Writing at or past expires_at could
			// be shadowed by a fold, so this mutator must stop; updates not
			// yet persisted are lost and their callers are told so.
			m.retired = true
			err = fmt.Errorf("%w: mutator %s reached its expiry before persisting", ErrNotApplied, m.id)
		}
		m.lastTS = ts
		m.mu.Unlock()

		var batch uint64
		start := time.Now()
		if err == nil {
			err = m.e.writeShard(driver.WriteShardParams{
				Namespace:   m.target.Namespace,
				Counter:     m.target.Counter,
				Shard:       driver.Shard{ID: m.id, State: snapshot, ExpiresAt: m.expiresAt},
				Timestamp:   ts,
				Consistency: m.target.WriteConsistency,
			})
		}

		m.mu.Lock()
		if err == nil && upto > m.durable {
			batch = upto - m.durable
			m.durable = upto
		}
		if err != nil && m.durable >= upto {
			// A newer snapshot, written concurrently, already made every
			// update of this round durable: they are acknowledged.
			err = nil
		}
		m.mu.Unlock()
		if err != nil && !errors.Is(err, ErrNotApplied) {
			err = fmt.Errorf("%w: shard write failed: %w", ErrUnknownOutcome, err)
		}
		m.e.cfg.Hooks.commit(batch, time.Since(start), err)
		r.err = err
		close(r.done)
	}
}
