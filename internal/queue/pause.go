package queue

import (
	"context"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// PauseState is whether a queue is paused, and since when (zero for a
// queue never paused or resumed).
type PauseState struct {
	Paused bool
	Since  time.Time
}

// pauses caches each queue's pause state for Config.PauseRefresh, so that
// a busy consumer reads it about once a refresh, not once a receive.
type pauses struct {
	mu   sync.Mutex
	seen map[string]pauseSeen
}

type pauseSeen struct {
	state PauseState
	// began is the real time the read (or write) that learnt state began.
	// An entry is trusted until began + PauseRefresh, and a read that began
	// earlier never replaces it: so once PauseRefresh has passed since a
	// pause returned, every state in use was read after it.
	began time.Time
}

// Pause stops the queue's deliveries in every process: no consumer starts
// handing out its messages once it has seen the pause, which every process
// does within Config.PauseRefresh of Pause returning (a delivery already
// under way finishes). Everything else goes on — puts, acks, nacks,
// releases, extensions, dead-letter requeues — and messages fall due as
// usual, to be delivered after Resume. Pausing a paused queue changes
// nothing. It returns the queue's pause state; ErrNotFound for an unknown
// queue.
func (s *Service) Pause(ctx context.Context, name string) (PauseState, error) {
	return s.setPause(ctx, name, true)
}

// Resume lets a paused queue's consumers deliver again, in every process
// within Config.PauseRefresh. Resuming a queue that is not paused changes
// nothing.
func (s *Service) Resume(ctx context.Context, name string) (PauseState, error) {
	return s.setPause(ctx, name, false)
}

// PauseState reads the queue's pause state from the store (not the cache);
// ErrNotFound for an unknown queue.
func (s *Service) PauseState(ctx context.Context, name string) (PauseState, error) {
	q, err := s.Queue(ctx, name)
	if err != nil {
		return PauseState{}, err
	}
	return s.readPause(ctx, q)
}

func (s *Service) setPause(ctx context.Context, name string, paused bool) (PauseState, error) {
	q, err := s.Queue(ctx, name)
	if err != nil {
		return PauseState{}, err
	}
	cur, err := s.readPause(ctx, q)
	if err != nil || cur.Paused == paused {
		return cur, err
	}
	// The store keeps the later of racing calls, so Since must be later
	// than the state read: a clock behind it would otherwise lose.
	since := s.now().Truncate(time.Millisecond)
	if !since.After(cur.Since) {
		since = cur.Since.Add(time.Millisecond)
	}
	next := driver.QueuePause{Paused: paused, Since: since}
	if err := s.store.SetQueuePause(ctx, &driver.SetQueuePauseParams{Queue: q.stored(), Pause: next}); err != nil {
		return PauseState{}, err
	}
	// Answer, and cache, what the store holds now: a racing call from
	// another process, made later, may have won.
	return s.readPause(ctx, q)
}

// PauseStates reads the pause states of queues known to exist (a listing),
// several at once, without looking each queue up.
func (s *Service) PauseStates(ctx context.Context, qs []*Queue) ([]PauseState, error) {
	out := make([]PauseState, len(qs))
	err := forEach(len(qs), func(i int) (err error) {
		out[i], err = s.readPause(ctx, qs[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readPause reads q's pause state. Each generation of a name has its own
// (a queue made again starts unpaused), cached under its stored name.
func (s *Service) readPause(ctx context.Context, q *Queue) (PauseState, error) {
	began := time.Now()
	name := q.stored()
	p, err := s.store.GetQueuePause(ctx, &driver.GetQueuePauseParams{Queue: name})
	if err != nil {
		return PauseState{}, err
	}
	st := PauseState(p)
	s.pauses.remember(name, st, began)
	return st, nil
}

// paused reports whether the queue is paused, from the cache when the
// state was read less than Config.PauseRefresh ago.
func (s *Service) paused(ctx context.Context, q *Queue) (bool, error) {
	name := q.stored()
	if st, ok := s.pauses.fresh(name, s.cfg.PauseRefresh); ok {
		return st.Paused, nil
	}
	st, err := s.readPause(ctx, q)
	if err != nil && s.pauses.last(name).Paused {
		// Staying paused when the state cannot be read keeps the promise;
		// delivering on a stale "not paused" would not.
		return true, nil
	}
	return st.Paused, err
}

func (p *pauses) remember(name string, st PauseState, began time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[string]pauseSeen{}
	}
	if cur, ok := p.seen[name]; ok && cur.began.After(began) {
		return
	}
	p.seen[name] = pauseSeen{state: st, began: began}
}

func (p *pauses) fresh(name string, refresh time.Duration) (PauseState, bool) {
	if refresh <= 0 {
		return PauseState{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seen, ok := p.seen[name]
	if !ok || time.Since(seen.began) >= refresh {
		return PauseState{}, false
	}
	return seen.state, true
}

// last is the latest state this process learnt, however old (zero if none).
func (p *pauses) last(name string) PauseState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[name].state
}
