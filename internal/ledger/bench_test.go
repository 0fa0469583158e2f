package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/sharded"
)

// BenchmarkCredit measures credits through the engine: 32 concurrent
// callers in a closed loop, each credit with a fresh request id, on the
// embedded store (on disk, fsync per write) and, when
// ABACUS_TEST_CASSANDRA is set, on Cassandra at QUORUM. It reports
// credits/s and the p50/p99 latency of one credit. Shapes:
//
//   - hot: one ledger, one process (its actor serialises every credit)
//   - hot-4proc: one ledger, four processes (four actors)
//   - 100ledgers: credits spread over 100 ledgers, one process
//
// Each shape runs with the ledger history on (the default, 30 days) and
// off ("nohistory"), to show what the history's entries cost. For context
// the same harness also drives a sharded sum counter (one hot counter,
// group commit). docs/benchmarks-ledger.md has a run's numbers.
func BenchmarkCredit(b *testing.B) {
	stores := map[string]func(b *testing.B) driver.Driver{
		"embedded":  benchEmbedded,
		"cassandra": func(b *testing.B) driver.Driver { return benchCassandra(b) },
	}
	for _, store := range []string{"embedded", "cassandra"} {
		b.Run(store, func(b *testing.B) {
			for _, mode := range []string{"default", "strict"} {
				for _, history := range []string{"history", "nohistory"} {
					for _, shape := range []struct {
						name           string
						procs, ledgers int
					}{{"hot", 1, 1}, {"hot-4proc", 4, 1}, {"100ledgers", 1, 100}} {
						opts := Options{Mode: modeOf(mode == "strict")}
						if history == "nohistory" {
							opts.EntryRetention = -1
						}
						b.Run(mode+"/"+history+"/"+shape.name, func(b *testing.B) {
							benchCredits(b, stores[store](b), opts, shape.procs, shape.ledgers)
						})
					}
				}
			}
			b.Run("sharded-counter/hot", func(b *testing.B) { benchSharded(b, stores[store](b)) })
		})
	}
}

// BenchmarkDebitFloor measures debits far from the floor: each ledger
// holds 2^60 before the run, and the same debits go to a namespace with a
// floor of 0 and to one without (exact mode, history on, 32 callers).
// The target is floored ≥ 0.5× unfloored; docs/benchmarks-ledger.md
// has a run's numbers.
func BenchmarkDebitFloor(b *testing.B) {
	stores := map[string]func(b *testing.B) driver.Driver{
		"embedded":  benchEmbedded,
		"cassandra": func(b *testing.B) driver.Driver { return benchCassandra(b) },
	}
	for _, store := range []string{"embedded", "cassandra"} {
		b.Run(store, func(b *testing.B) {
			for _, shape := range []struct {
				name           string
				procs, ledgers int
			}{{"hot", 1, 1}, {"hot-4proc", 4, 1}, {"100ledgers", 1, 100}} {
				for _, floor := range []string{"nofloor", "floor0"} {
					opts := Options{Floored: floor == "floor0"}
					b.Run(shape.name+"/"+floor, func(b *testing.B) {
						benchDebits(b, stores[store](b), opts, shape.procs, shape.ledgers)
					})
				}
			}
		})
	}
}

// BenchmarkDebitNearFloor keeps one ledger near its floor: the callers
// alternate credits and debits of 10 on a balance that starts at 1,000 or
// 100, so the balance hovers there above a floor of 0, a hundred or ten
// debits' worth, and grants are small and frequent. Each operation counts once
// whatever its answer; the share refused (below_floor, rights_held) is
// reported as refused-%. "nofloor" runs the same mix without a floor.
func BenchmarkDebitNearFloor(b *testing.B) {
	for _, store := range []string{"embedded", "cassandra"} {
		b.Run(store, func(b *testing.B) {
			for _, procs := range []int{1, 4} {
				for _, balance := range []int64{1000, 100} {
					for _, floor := range []string{"nofloor", "floor0"} {
						b.Run(fmt.Sprintf("procs=%d/balance=%d/%s", procs, balance, floor), func(b *testing.B) {
							var d driver.Driver
							if store == "cassandra" {
								d = benchCassandra(b)
							} else {
								d = benchEmbedded(b)
							}
							benchNearFloor(b, d, Options{Floored: floor == "floor0"}, procs, balance)
						})
					}
				}
			}
		})
	}
}

func benchNearFloor(b *testing.B, d driver.Driver, opts Options, procs int, balance int64) {
	engines, targets := benchEngines(b, d, opts, procs, 1)
	if _, err := engines[0].Update(context.Background(), targets[0], balance, "seed"); err != nil {
		b.Fatal(err)
	}
	var next, refused atomic.Int64
	runUnit(b, "ops/s", func(ctx context.Context) error {
		n := next.Add(1)
		amount := int64(10)
		if n%2 == 0 {
			amount = -10
		}
		_, err := engines[int(n)%procs].Update(ctx, targets[0], amount, fmt.Sprint("r", n))
		if errors.Is(err, ErrBelowFloor) || errors.Is(err, ErrRightsHeld) {
			refused.Add(1)
			return nil
		}
		return err
	})
	b.ReportMetric(100*float64(refused.Load())/float64(b.N), "refused-%")
}

func benchDebits(b *testing.B, d driver.Driver, opts Options, procs, ledgers int) {
	engines, targets := benchEngines(b, d, opts, procs, ledgers)
	for _, t := range targets {
		if _, err := engines[0].Update(context.Background(), t, 1<<60, "seed"); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	runUnit(b, "debits/s", func(ctx context.Context) error {
		n := next.Add(1)
		e := engines[int(n)%procs]
		_, err := e.Update(ctx, targets[int(n)%ledgers], -(1 + n%100), fmt.Sprint("r", n))
		return err
	})
}

// benchEmbedded opens an embedded store on disk, each write synced.
func benchEmbedded(b *testing.B) driver.Driver {
	d, err := embedded.Open(context.Background(), embedded.Config{Dir: b.TempDir(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close() })
	return d
}

const benchCallers = 32

var benchSeq atomic.Int64

func benchCredits(b *testing.B, d driver.Driver, opts Options, procs, ledgers int) {
	engines, targets := benchEngines(b, d, opts, procs, ledgers)
	var next atomic.Int64
	run(b, func(ctx context.Context) error {
		n := next.Add(1)
		e := engines[int(n)%procs]
		_, err := e.Update(ctx, targets[int(n)%ledgers], 1+n%100, fmt.Sprint("r", n))
		return err
	})
}

// benchEngines makes procs engines (processes) and ledgers targets in a
// namespace of their own.
func benchEngines(b *testing.B, d driver.Driver, opts Options, procs, ledgers int) ([]*Engine, []Target) {
	ns := fmt.Sprintf("bench%d", benchSeq.Add(1))
	engines := make([]*Engine, procs)
	for i := range engines {
		e, err := New(Config{Store: d, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = e.Close(context.Background()) })
		engines[i] = e
	}
	targets := make([]Target, ledgers)
	for i := range targets {
		targets[i] = Target{Namespace: ns, Ledger: fmt.Sprint("l", i), Options: opts.WithDefaults()}
	}
	return engines, targets
}

func benchSharded(b *testing.B, d driver.Driver) {
	eng, err := sharded.New(sharded.Config{Store: d, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = eng.Close(context.Background()) })
	t := sharded.Target{Namespace: fmt.Sprintf("bench%d", benchSeq.Add(1)), Counter: "c", Kind: crdt.KindSum}
	var next atomic.Int64
	run(b, func(ctx context.Context) error {
		return eng.Apply(ctx, t, crdt.Op{Delta: 1}, fmt.Sprint("r", next.Add(1)))
	})
}

// run calls op b.N times from benchCallers goroutines and reports
// throughput (as credits/s) and latency percentiles.
func run(b *testing.B, op func(context.Context) error) { runUnit(b, "credits/s", op) }

// runUnit is run with throughput reported in unit.
func runUnit(b *testing.B, unit string, op func(context.Context) error) {
	ctx := context.Background()
	var (
		mu    sync.Mutex
		lat   = make([]time.Duration, 0, b.N)
		errs  atomic.Int64
		left  atomic.Int64
		first error
		wg    sync.WaitGroup
	)
	left.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	for range benchCallers {
		wg.Go(func() {
			mine := make([]time.Duration, 0, b.N/benchCallers+1)
			for left.Add(-1) >= 0 {
				t := time.Now()
				err := op(ctx)
				mine = append(mine, time.Since(t))
				if err != nil && errs.Add(1) == 1 {
					mu.Lock()
					first = err
					mu.Unlock()
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := errs.Load(); n > 0 {
		b.Fatalf("%d of %d operations failed; first: %v", n, b.N, first)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), unit)
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op") // wall time per op hides the concurrency; credits/s says it
}

// benchCassandra is the tests' shared keyspace (skipped without
// ABACUS_TEST_CASSANDRA).
func benchCassandra(b *testing.B) driver.Driver { return sharedCassandra(b) }

// BenchmarkReadActors measures a read of a ledger that 1, 100 or 1,000
// processes have credited once each, so that it holds that many actor
// rows: what a ledger written by restarting servers comes to (issue 12).
// The retired=N cases hold N actors born beyond the fold age, folded,
// and one live actor: what folding leaves of the same ledger. 32
// concurrent callers read; it reports reads/s and latency. On the
// embedded store, and on Cassandra when ABACUS_TEST_CASSANDRA is set.
func BenchmarkReadActors(b *testing.B) {
	for _, store := range []string{"embedded", "cassandra"} {
		b.Run(store, func(b *testing.B) {
			for _, tc := range []struct {
				name          string
				live, retired int
			}{{"actors=1", 1, 0}, {"actors=100", 100, 0}, {"actors=1000", 1000, 0}, {"retired=100", 1, 100}, {"retired=1000", 1, 1000}} {
				b.Run(tc.name, func(b *testing.B) {
					var d driver.Driver
					if store == "embedded" {
						d = benchEmbedded(b)
					} else {
						d = benchCassandra(b)
					}
					engines, targets := benchEngines(b, d, Options{}, 1, 1)
					ctx := context.Background()
					// Retired actors were born three days ago, beyond the
					// default fold age (about 51h); live ones now.
					past := clock.NewManual(time.Now().Add(-72 * time.Hour))
					for i := range tc.retired + tc.live {
						cfg := Config{Store: d, Logger: quiet}
						if i < tc.retired {
							cfg.Clock = past
						}
						e, err := New(cfg)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := e.Update(ctx, targets[0], 1, fmt.Sprint("seed", i)); err != nil {
							b.Fatal(err)
						}
						if err := e.Close(ctx); err != nil {
							b.Fatal(err)
						}
					}
					if tc.retired > 0 {
						if base, err := engines[0].Fold(ctx, targets[0]); err != nil || base.P != int64(tc.retired) {
							b.Fatalf("fold: %v, %v; want %d credits passed", base, err, tc.retired)
						}
					}
					runUnit(b, "reads/s", func(ctx context.Context) error {
						st, err := engines[0].Read(ctx, targets[0])
						if err != nil {
							return err
						}
						if v, _ := st.Value(); st.Len() != tc.live || v != int64(tc.live+tc.retired) {
							return fmt.Errorf("read %d actors and value %d, want %d and %d", st.Len(), v, tc.live, tc.live+tc.retired)
						}
						return nil
					})
				})
			}
		})
	}
}

// BenchmarkTransfer measures transfers against debits of the same
// ledgers: 32 callers, one process, exact mode, history on, each ledger
// holding 2^60 first. With 2 ledgers every transfer goes between the same
// pair (in turn each way); with 100, from ledger i to ledger i+1, or with
// into=one from ledgers 1 to 99 into ledger 0, as payments into one house
// account. The debits go to the transfers' sources, grouped by the engine
// as usual; transfers into one ledger are grouped too (transfer.go).
// docs/benchmarks-ledger.md has a run's numbers.
func BenchmarkTransfer(b *testing.B) {
	for _, store := range []string{"embedded", "cassandra"} {
		b.Run(store, func(b *testing.B) {
			for _, shape := range []struct {
				ledgers int
				intoOne bool
			}{{2, false}, {100, false}, {100, true}} {
				ledgers := shape.ledgers
				name := fmt.Sprintf("ledgers=%d", ledgers)
				if shape.intoOne {
					name += "/into=one"
				}
				for _, kind := range []string{"debit", "transfer"} {
					b.Run(name+"/"+kind, func(b *testing.B) {
						var d driver.Driver
						if store == "cassandra" {
							d = benchCassandra(b)
						} else {
							d = benchEmbedded(b)
						}
						engines, targets := benchEngines(b, d, Options{}, 1, ledgers)
						e := engines[0]
						for _, t := range targets {
							if _, err := e.Update(context.Background(), t, 1<<60, "seed"); err != nil {
								b.Fatal(err)
							}
						}
						var next atomic.Int64
						runUnit(b, kind+"s/s", func(ctx context.Context) error {
							n := next.Add(1)
							from, to, amount, id := int(n)%ledgers, int(n+1)%ledgers, 1+n%100, fmt.Sprint("r", n)
							if shape.intoOne {
								from, to = 1+int(n)%(ledgers-1), 0
							}
							if kind == "debit" {
								_, err := e.Update(ctx, targets[from], -amount, id)
								return err
							}
							_, err := e.Transfer(ctx, targets[from], targets[to], amount, id)
							return err
						})
					})
				}
			}
		})
	}
}
