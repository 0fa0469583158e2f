package sharded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// newStore opens a real embedded store on an in-memory filesystem.
func newStore(t *testing.T) driver.Driver {
	t.Helper()
	d, err := embedded.Open(context.Background(), embedded.Config{FS: vfs.NewMem(), Dir: "db"})
	if err != nil {
		t.Fatalf("open embedded store: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// faultyStore wraps a real store and injects the failures a network store
// shows: writes that fail before landing, writes that land but report a
// timeout, slow writes, and reads at ALL that fail because a replica is down.
type faultyStore struct {
	driver.Shards

	mu          sync.Mutex
	writes      []driver.WriteShardParams            // every write that reached the store
	batches     [][]string                           // the counters of every WriteShards call
	badBatches  int                                  // WriteShards calls the contract refuses (two levels)
	failBefore  int                                  // fail the next N writes without applying them
	failAfter   int                                  // apply the next N writes, then report a timeout
	delay       time.Duration                        // sleep before each write
	gate        chan struct{}                        // when set, writes wait for it to close
	jitter      time.Duration                        // random extra delay, so pipelined writes land out of order
	before      func() error                         // when set, runs first; an error fails the write unapplied
	refuse      func(*driver.WriteShardParams) error // when set, an error it returns fails that write unapplied
	allReadsErr error                                // returned by reads at ALL
	reads       int
	froms       []string                                // ReadShardsParams.From of every read
	bounded     func(*driver.ShardSet) *driver.ShardSet // when set, rewrites what reads with a From return
	afterAll    func()                                  // when set, runs after a read at ALL has read, before it returns
	requests    int                                     // WriteShard and WriteShards calls under way
	maxRequests int                                     // the most requests ever under way at once
}

// request counts a write request under way until the returned func runs.
func (f *faultyStore) request() func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	f.maxRequests = max(f.maxRequests, f.requests)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests--
	}
}

// inFlight returns the requests under way and the most there ever were.
func (f *faultyStore) inFlight() (now, most int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, f.maxRequests
}

func (f *faultyStore) WriteShard(ctx context.Context, p *driver.WriteShardParams) error {
	defer f.request()()
	return f.writeShard(ctx, p)
}

// writeShard makes one write, whether a request of its own or one of a
// batch's.
func (f *faultyStore) writeShard(ctx context.Context, p *driver.WriteShardParams) error {
	f.mu.Lock()
	gate, delay, jitter, before, refuse := f.gate, f.delay, f.jitter, f.before, f.refuse
	f.mu.Unlock()
	if before != nil {
		if err := before(); err != nil {
			return err
		}
	}
	if refuse != nil {
		if err := refuse(p); err != nil {
			return err
		}
	}
	if gate != nil {
		<-gate
	}
	if jitter > 0 {
		delay += time.Duration(rand.Int64N(int64(jitter)))
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failBefore > 0 {
		f.failBefore--
		return fmt.Errorf("injected: %w", driver.ErrUnavailable)
	}
	cp := *p
	cp.Shard.State = append([]byte(nil), p.Shard.State...)
	f.writes = append(f.writes, cp)
	if err := f.Shards.WriteShard(ctx, p); err != nil {
		return err
	}
	if f.failAfter > 0 {
		f.failAfter--
		return fmt.Errorf("injected timeout after the write landed: %w", driver.ErrUnknownOutcome)
	}
	return nil
}

// WriteShards makes each write as WriteShard does, faults and all, and
// reports the first failure for the whole batch, as a store whose request
// failed part-way would.
func (f *faultyStore) WriteShards(ctx context.Context, ws []driver.WriteShardParams) error {
	defer f.request()()
	counters := make([]string, len(ws))
	for i, w := range ws {
		counters[i] = w.Counter
	}
	f.mu.Lock()
	f.batches = append(f.batches, counters)
	f.mu.Unlock()
	if err := driver.CheckShardWrites(ws); err != nil {
		f.mu.Lock()
		f.badBatches++
		f.mu.Unlock()
		return err // the contract's check, which a real store makes too
	}
	var first error
	for i := range ws {
		if err := f.writeShard(ctx, &ws[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (f *faultyStore) ReadShards(ctx context.Context, p *driver.ReadShardsParams) (*driver.ShardSet, error) {
	f.mu.Lock()
	f.reads++
	f.froms = append(f.froms, p.From)
	err, bounded, afterAll := f.allReadsErr, f.bounded, f.afterAll
	f.mu.Unlock()
	if err != nil && p.Consistency == driver.All {
		return nil, err
	}
	set, err := f.Shards.ReadShards(ctx, p)
	if err == nil && p.From != "" && bounded != nil {
		set = bounded(set)
	}
	if err == nil && p.Consistency == driver.All && afterAll != nil {
		afterAll()
	}
	return set, err
}

// lastFrom returns the From of the latest read.
func (f *faultyStore) lastFrom() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.froms[len(f.froms)-1]
}

func (f *faultyStore) set(fn func(f *faultyStore)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// batchSizes returns the size of every WriteShards call so far.
func (f *faultyStore) batchSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var sizes []int
	for _, b := range f.batches {
		sizes = append(sizes, len(b))
	}
	return sizes
}

// batchesOf returns the counters of every WriteShards call that held
// counter.
func (f *faultyStore) batchesOf(counter string) [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for _, b := range f.batches {
		if slices.Contains(b, counter) {
			out = append(out, b)
		}
	}
	return out
}

func (f *faultyStore) writeLog() []driver.WriteShardParams {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]driver.WriteShardParams(nil), f.writes...)
}
