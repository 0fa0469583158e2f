package cas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func openStore(t *testing.T) *embedded.Driver {
	t.Helper()
	d, err := embedded.Open(context.Background(), embedded.Config{FS: vfs.NewMem(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func TestConcurrentAddsAreExact(t *testing.T) {
	t.Parallel()
	d := openStore(t)
	tg := Target{Namespace: "ns", Counter: "hot"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	attempts := 0
	for range 8 {
		wg.Go(func() {
			for range 25 {
				res, err := Add(context.Background(), d, tg, 2, Options{MaxAttempts: 1000, BackoffBase: time.Microsecond, BackoffMax: time.Millisecond})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				attempts += res.Attempts
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	v, err := d.ReadCAS(context.Background(), &driver.ReadCASParams{Namespace: "ns", Counter: "hot"})
	if err != nil || v.Value != 400 || !v.Exists {
		t.Fatalf("value %+v, %v; want 400", v, err)
	}
	t.Logf("200 adds took %d compare-and-sets", attempts)
}

// contended loses every compare-and-set: another writer always got there first.
type contended struct {
	driver.CASCounters
	calls int
}

func (c *contended) CompareAndSetCAS(ctx context.Context, p *driver.CompareAndSetCASParams) (driver.CASResult, error) {
	c.calls++
	return driver.CASResult{Current: driver.CASValue{Exists: true, Value: int64(c.calls)}}, nil
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	st := &contended{CASCounters: openStore(t)}
	res, err := Add(context.Background(), st, Target{Namespace: "ns", Counter: "c"}, 1, Options{MaxAttempts: 5, BackoffBase: time.Microsecond})
	if !errors.Is(err, ErrContention) || res.Attempts != 5 || st.calls != 5 {
		t.Fatalf("Add = %+v, %v after %d calls; want ErrContention after 5", res, err, st.calls)
	}
}

func TestOverflowAppliesNothing(t *testing.T) {
	t.Parallel()
	d := openStore(t)
	tg := Target{Namespace: "ns", Counter: "c"}
	if _, err := Set(context.Background(), d, tg, math.MaxInt64-1, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(context.Background(), d, tg, 2, Options{}); !errors.Is(err, ErrOverflow) {
		t.Fatalf("overflowing add: %v", err)
	}
	v, _ := d.ReadCAS(context.Background(), &driver.ReadCASParams{Namespace: "ns", Counter: "c"})
	if v.Value != math.MaxInt64-1 {
		t.Fatalf("value %d after a refused add", v.Value)
	}
	if _, err := Set(context.Background(), d, tg, 0, Options{}); err != nil {
		t.Fatal(err)
	}
	if res, err := Add(context.Background(), d, tg, -7, Options{}); err != nil || res.Value != -7 {
		t.Fatalf("Add after Set(0) = %+v, %v", res, err)
	}
}

// A store error (a timeout) is returned as it is: it may have applied, so
// the loop must not try again.
type failing struct {
	driver.CASCounters
	calls int
}

func (f *failing) CompareAndSetCAS(context.Context, *driver.CompareAndSetCASParams) (driver.CASResult, error) {
	f.calls++
	return driver.CASResult{}, fmt.Errorf("%w: injected", driver.ErrUnknownOutcome)
}

func TestUnknownOutcomeIsNotRetried(t *testing.T) {
	t.Parallel()
	st := &failing{CASCounters: openStore(t)}
	_, err := Add(context.Background(), st, Target{Namespace: "ns", Counter: "c"}, 1, Options{})
	if !errors.Is(err, driver.ErrUnknownOutcome) || st.calls != 1 {
		t.Fatalf("Add = %v after %d calls; want the unknown outcome after 1", err, st.calls)
	}
}

// failingRead fails the read that starts the loop, as a dropped connection does.
type failingRead struct{ driver.CASCounters }

func (failingRead) ReadCAS(context.Context, *driver.ReadCASParams) (driver.CASValue, error) {
	return driver.CASValue{}, errors.New("EOF")
}

func TestFailedReadIsNotApplied(t *testing.T) {
	t.Parallel()
	st := failingRead{openStore(t)}
	if _, err := Add(context.Background(), st, Target{Namespace: "ns", Counter: "c"}, 1, Options{}); !errors.Is(err, ErrNotApplied) {
		t.Fatalf("Add after a failed read: %v, want ErrNotApplied", err)
	}
}
