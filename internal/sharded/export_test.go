package sharded

// Applied returns how many updates the live mutator of t has applied (0
// when it has none), for tests that must know an update is in memory
// before they go on.
func Applied(e *Engine, t Target) uint64 {
	e.mu.Lock()
	el, ok := e.mutators[t.key()]
	e.mu.Unlock()
	if !ok {
		return 0
	}
	m := el.Value.(*mutator)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applied
}

// Closing reports whether Close has begun: the engine starts no new
// background work.
func Closing(e *Engine) bool {
	if !e.work.Enter() {
		return true
	}
	e.work.Leave()
	return false
}

// Queued returns how many shard writes wait for a combined request (0
// when writes are not combined).
func Queued(e *Engine) int {
	if e.combiner == nil {
		return 0
	}
	return e.combiner.Queued()
}
