package systemtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ledger is the load generator's record of what it sent: per counter, the
// sum of acknowledged deltas and the sum of deltas whose outcome is unknown.
type ledger struct {
	mu      sync.Mutex
	acked   map[string]int64
	unknown map[string]int64
	counts  [3]int
	errs    []error
}

func newLedger() *ledger {
	return &ledger{acked: map[string]int64{}, unknown: map[string]int64{}}
}

func (l *ledger) record(counter string, delta int64, o outcome, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[o]++
	switch o {
	case acked:
		l.acked[counter] += delta
	case unknown:
		l.unknown[counter] += delta
	}
	if err != nil && len(l.errs) < 5 {
		l.errs = append(l.errs, err)
	}
}

type loadSpec struct {
	servers  func() []*server // the servers to spread load over (may shrink)
	ns       string
	counters int
	ops      int
	workers  int
	// retrySameServer resends an unknown outcome with the same request id
	// to the same server until it is acknowledged: within one process the
	// request id window makes that exactly-once.
	retrySameServer bool
	onProgress      func(done int)
}

// runLoad sends spec.ops updates with random positive deltas to random
// counters on random servers, concurrently, and records every outcome.
func runLoad(t *testing.T, spec loadSpec) *ledger {
	t.Helper()
	l := newLedger()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range spec.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for {
				i := int(next.Add(1))
				if i > spec.ops {
					return
				}
				if spec.onProgress != nil {
					spec.onProgress(i)
				}
				counter := fmt.Sprintf("c%02d", rng.IntN(spec.counters))
				delta := 1 + rng.Int64N(1000)
				id := fmt.Sprintf("w%d-op%d", w, i)
				servers := spec.servers()
				s := servers[rng.IntN(len(servers))]
				o, err := s.add(spec.ns, counter, delta, id)
				for try := 0; spec.retrySameServer && o == unknown && try < 20; try++ {
					time.Sleep(100 * time.Millisecond)
					o, err = s.add(spec.ns, counter, delta, id)
				}
				l.record(counter, delta, o, err)
			}
		}()
	}
	wg.Wait()
	t.Logf("load: %d acked, %d failed, %d unknown; first errors: %v", l.counts[acked], l.counts[failed], l.counts[unknown], l.errs)
	return l
}

// check reads every counter from every given server and compares it with
// the ledger: acked <= value <= acked + unknown (exactly acked when nothing
// is unknown). A value below acked means an acknowledged update was lost; a
// value above acked + unknown means something was applied twice.
func check(t *testing.T, l *ledger, ns string, counters int, readers ...*server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range counters {
		c := fmt.Sprintf("c%02d", i)
		lo, hi := l.acked[c], l.acked[c]+l.unknown[c]
		for _, s := range readers {
			v, err := s.get(ctx, ns, c)
			if err != nil {
				t.Fatalf("read %s from %s: %v", c, s.Name, err)
			}
			if v < lo {
				t.Errorf("%s on %s = %d: lost %d of acknowledged updates (acked sum %d)", c, s.Name, v, lo-v, lo)
			} else if v > hi {
				t.Errorf("%s on %s = %d: %d more than acked %d + unknown %d: double-applied", c, s.Name, v, v-hi, lo, hi-lo)
			}
		}
	}
}
