package registry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

var errNotFound, errExists = errors.New("not found"), errors.New("exists")

// store is a record store that counts its reads; a read waits for gate
// when one is set.
type store struct {
	reads   atomic.Int64
	mu      sync.Mutex
	records map[string]int
	gate    chan struct{}
}

func (s *store) registry(refresh time.Duration) *Registry[int, int] {
	return &Registry[int, int]{
		NotFound: errNotFound, Exists: errExists,
		Validate: func(string) error { return nil },
		Read: func(ctx context.Context, name string) (*int, error) {
			s.reads.Add(1)
			if s.gate != nil {
				<-s.gate
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			v, ok := s.records[name]
			if !ok {
				return nil, driver.ErrNotFound
			}
			return &v, nil
		},
		Decode:  func(r *int) (*int, error) { return r, nil },
		Refresh: refresh,
	}
}

func (s *store) set(name string, v int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[name] = v
}

func TestRecordsAreKeptForGoodWithoutARefresh(t *testing.T) {
	s := &store{records: map[string]int{"a": 1}}
	g := s.registry(0)
	for range 3 {
		if v, err := g.Lookup(context.Background(), "a"); err != nil || *v != 1 {
			t.Fatalf("Lookup: %v, %v", v, err)
		}
	}
	s.set("a", 2)
	if v, _ := g.Lookup(context.Background(), "a"); *v != 1 || s.reads.Load() != 1 {
		t.Fatalf("got %d after %d reads; want the cached 1 after one read", *v, s.reads.Load())
	}
	if _, err := g.Lookup(context.Background(), "b"); !errors.Is(err, errNotFound) {
		t.Fatalf("Lookup of a missing record: %v", err)
	}
}

// With a refresh, a change made in the store is seen once the cached
// record is a refresh old, and not before.
func TestRecordsAreReadAgainAfterTheRefresh(t *testing.T) {
	s := &store{records: map[string]int{"a": 1}}
	const refresh = 50 * time.Millisecond
	g := s.registry(refresh)
	began := time.Now()
	if v, _ := g.Lookup(context.Background(), "a"); *v != 1 {
		t.Fatalf("got %d, want 1", *v)
	}
	s.set("a", 2)
	if v, _ := g.Lookup(context.Background(), "a"); *v != 1 && time.Since(began) < refresh {
		t.Fatalf("a record younger than the refresh was read again")
	}
	time.Sleep(refresh)
	if v, _ := g.Lookup(context.Background(), "a"); *v != 2 {
		t.Fatalf("after the refresh got %d, want the store's 2", *v)
	}
}

// Lookups of a name whose record must be read share one read, and a
// caller that gives up does not fail the others.
func TestConcurrentLookupsShareARead(t *testing.T) {
	s := &store{records: map[string]int{"a": 1}, gate: make(chan struct{})}
	g := s.registry(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	quitter := make(chan error, 1)
	go func() {
		_, err := g.Lookup(ctx, "a")
		quitter <- err
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := g.Lookup(context.Background(), "a")
			if err == nil && *v != 1 {
				err = errors.New("wrong value")
			}
			errs <- err
		}()
	}
	for s.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the others join the read
	cancel()
	if err := <-quitter; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that gave up got %v", err)
	}
	close(s.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := s.reads.Load(); n > 2 {
		t.Fatalf("9 concurrent lookups made %d reads; want them to share one", n)
	}
}

// A read that began before Forget does not cache what it found: the next
// lookup reads again. That is how a delete made in this process takes
// effect at once, even with a read of the old record under way.
func TestForgetKeepsAnEarlierReadOutOfTheCache(t *testing.T) {
	s := &store{records: map[string]int{"a": 1}, gate: make(chan struct{})}
	g := s.registry(time.Hour)
	done := make(chan error, 1)
	go func() {
		_, err := g.Lookup(context.Background(), "a")
		done <- err
	}()
	for s.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	g.Forget("a")
	s.set("a", 2)
	close(s.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Cached("a"); ok {
		t.Fatal("a read that began before Forget cached its record")
	}
	if v, err := g.Lookup(context.Background(), "a"); err != nil || *v != 2 || s.reads.Load() != 2 {
		t.Fatalf("after Forget: %v, %v after %d reads; want 2 from a second read", v, err, s.reads.Load())
	}
}

// A lookup does not join a read that began a refresh ago or more: that
// read may have missed a change the caller must see.
func TestLookupsJoinOnlyFreshReads(t *testing.T) {
	s := &store{records: map[string]int{"a": 1}, gate: make(chan struct{})}
	const refresh = 30 * time.Millisecond
	g := s.registry(refresh)
	first := make(chan error, 1)
	go func() {
		_, err := g.Lookup(context.Background(), "a")
		first <- err
	}()
	for s.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(refresh)
	second := make(chan error, 1)
	go func() {
		_, err := g.Lookup(context.Background(), "a")
		second <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); s.reads.Load() < 2; {
		if time.Now().After(deadline) {
			close(s.gate)
			t.Fatal("the second lookup joined a read that began a refresh before it")
		}
		time.Sleep(time.Millisecond)
	}
	close(s.gate)
	if err := errors.Join(<-first, <-second); err != nil {
		t.Fatal(err)
	}
}
