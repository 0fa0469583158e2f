package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/embedded"
)

// agingDay is one simulated day of the aging scenario.
const agingDay = 24 * time.Hour

// agingParallelism bounds the writer processes that run at once within a
// simulated day: enough to keep the store busy, few enough for two cores.
const agingParallelism = 8

// aging compresses weeks of sharded counters' lives into minutes. Time is a
// manual clock that every writer and the reader share, ending near real
// time (Cassandra keeps real timestamps in order); the library keeps its
// defaults (24 h mutator lifetime, 24 h GC grace), so shards become final
// and are folded exactly as in production, only sooner.
//
// Every simulated day each of Config.AgingWriters writer processes starts
// (new mutators), adds 1 to the hot counter, and every tenth also to the
// cold one, then stops; the day passes; one collection folds what is final
// and purges the tombstones GC may drop; and the reader process, started at the beginning and kept (as a server
// is), reads each counter for Config.AgingReadTime. The rows show whether a
// read gets slower as the folded shards pile up. Each writer also credits
// a ledger, as an actor of its own, and the reader credits another ledger
// once a day as one actor: the rows compare a ledger read over every
// actor a restarting fleet leaves behind with one over a single actor.
// Each writer also adds an event to an events counter, which the day's
// rollup folds. A native counter's read is measured on the first and last
// day as the baseline on Cassandra. Each row also records what one more
// read of it stepped over: Cassandra's trace, or the embedded driver's
// read stats (traceAgingRead).
func (s *suite) aging(ctx context.Context) ([]Row, error) {
	days, writers := s.cfg.AgingDays, s.cfg.AgingWriters
	clk := clock.NewManual(time.Now().Add(-time.Duration(days+3) * agingDay))
	reader, err := s.agingClient(ctx, clk)
	if err != nil {
		return nil, err
	}
	defer s.stopClient(reader)
	hot, cold := s.names("aging-hot", 1)[0], s.names("aging-cold", 1)[0]
	// Ledgers: every writer process credits the busy one once, each with
	// an actor of its own (as every server process has); the reader
	// credits the other once a day, always as one actor.
	busyLedger, oneLedger := s.names("aging-ledger", 1)[0], s.names("aging-ledger-one", 1)[0]
	// An events counter: every writer adds one event to it, as to the hot
	// counter, and the day's rollup folds them.
	eventsNS, err := s.modelNamespace(ctx, reader, ModelEvents)
	if err != nil {
		return nil, err
	}
	events := s.names("aging-events", 1)[0]
	var hotWant, coldWant int64
	ledgerFolds := map[string]uint64{}
	o := Options{Concurrency: s.cfg.Options.Concurrency, Warmup: s.cfg.AgingReadTime / 5, Duration: s.cfg.AgingReadTime}
	var rows []Row
	native := func(day int) error {
		if s.native == nil {
			return nil
		}
		row, err := s.nativeReadsWith(ctx, o, 1)
		if err != nil {
			return err
		}
		row.Scenario, row.Kind, row.Day = fmt.Sprintf("aging day %d: native read", day), "aging_read", day
		row.Series = "native read"
		rows = append(rows, row)
		return nil
	}
	if err := native(1); err != nil {
		return rows, err
	}
	for day := 1; day <= days; day++ {
		if err := s.agingWriters(ctx, clk, writers, agingNames{hot: hot, cold: cold, ledger: busyLedger, eventsNS: eventsNS, events: events}); err != nil {
			return rows, fmt.Errorf("bench: aging day %d: %w", day, err)
		}
		hotWant += int64(writers)
		coldWant += int64((writers + 9) / 10)
		clk.Advance(agingDay)
		folded := 0
		collections := map[string]*Collection{}
		for _, name := range []string{hot, cold} {
			start := time.Now()
			res, err := collectRetrying(ctx, reader, abacus.DefaultNamespace, name)
			if err != nil {
				return rows, err
			}
			if res.Skipped {
				return rows, fmt.Errorf("bench: aging day %d: GC of %s skipped %d times: %v", day, name, collectAttempts, res.Err)
			}
			c := &Collection{Took: time.Since(start), Folded: res.Folded}
			if c.Behind, err = s.shardsBehind(ctx, clk.Now(), name); err != nil {
				return rows, fmt.Errorf("bench: aging day %d: %w", day, err)
			}
			collections[name] = c
			folded += res.Folded
		}
		start := time.Now()
		rolled, err := collectRetrying(ctx, reader, eventsNS, events)
		if err != nil {
			return rows, err
		}
		if rolled.Skipped {
			return rows, fmt.Errorf("bench: aging day %d: rollup of %s skipped %d times: %v", day, events, collectAttempts, rolled.Err)
		}
		collections[events] = &Collection{Took: time.Since(start), Folded: rolled.Folded}
		if collections[events].Behind, err = s.rollupBehind(ctx, clk.Now(), eventsNS, events); err != nil {
			return rows, fmt.Errorf("bench: aging day %d: %w", day, err)
		}
		// Reads fold ledgers in the background; the day's fold here
		// makes each day's row the same whatever the timing.
		for _, l := range []string{busyLedger, oneLedger} {
			start := time.Now()
			f, err := reader.FoldLedger(ctx, abacus.DefaultLedgerNamespace, l)
			if err != nil {
				return rows, fmt.Errorf("bench: aging day %d: folding ledger %s: %w", day, l, err)
			}
			c := &Collection{Took: time.Since(start)}
			// Reads start folds too, but the day's reads come after this
			// fold at the same simulated time, when there is nothing more
			// to pass: a new fold count is this fold's.
			if f.Folds > ledgerFolds[l] {
				c.Folded, ledgerFolds[l] = 1, f.Folds
			}
			if !f.Before.IsZero() {
				c.Behind = clk.Now().Sub(f.Before)
			}
			collections[l] = c
		}
		// As the GC sweeper does after each collection (a no-op on
		// Cassandra, which drops tombstones on its own).
		if _, err := reader.PurgeShardTombstones(ctx); err != nil {
			return rows, fmt.Errorf("bench: aging day %d: %w", day, err)
		}
		for _, c := range []struct {
			name, label string
			want        int64
		}{{hot, "hot", hotWant}, {cold, "cold", coldWant}} {
			v, err := reader.Get(ctx, abacus.DefaultNamespace, c.name)
			if err != nil {
				return rows, err
			}
			if v.Value != c.want {
				return rows, fmt.Errorf("bench: aging day %d: %s counter reads %d, want %d", day, c.label, v.Value, c.want)
			}
			row := s.measureWith(ctx, o, Row{
				Scenario: fmt.Sprintf("aging day %d: %s counter", day, c.label), Kind: "aging_read",
				Model: "sharded", Via: "library", Counters: 1, Shards: v.Shards, Day: day,
				Series: "sharded, " + c.label + " counter",
			}, ShardedReads(reader, abacus.DefaultNamespace, c.name))
			row.StoredBytes = s.storedBytes()
			row.Collection = collections[c.name]
			row.Check = fmt.Sprintf("ok: read %d from %d live shards; GC folded %d shards that day", c.want, v.Shards, folded)
			if row.StoredBytes > 0 {
				row.Check += fmt.Sprintf("; the store's files hold %d bytes", row.StoredBytes)
			}
			if row.Trace, err = s.traceAgingRead(ctx, func(ctx context.Context) error {
				_, err := reader.Get(ctx, abacus.DefaultNamespace, c.name)
				return err
			}); err != nil {
				return rows, fmt.Errorf("bench: aging day %d: %w", day, err)
			}
			rows = append(rows, row)
		}
		ev, err := reader.Get(ctx, eventsNS, events)
		if err != nil {
			return rows, err
		}
		if ev.Value != hotWant {
			return rows, fmt.Errorf("bench: aging day %d: events counter reads %d, want %d", day, ev.Value, hotWant)
		}
		row := s.measureWith(ctx, o, Row{
			Scenario: fmt.Sprintf("aging day %d: events counter", day), Kind: "aging_read",
			Model: ModelEvents, Via: "library", Counters: 1, Events: ev.Events, Day: day,
			Series: "events counter",
		}, EventsReads(reader, eventsNS, events))
		row.Check = fmt.Sprintf("ok: read %d, %s un-rolled; the rollup folded %d that day", hotWant, plural(ev.Events, "event"), rolled.Folded)
		row.Collection = collections[events]
		if row.Trace, err = s.traceAgingRead(ctx, func(ctx context.Context) error {
			_, err := reader.Get(ctx, eventsNS, events)
			return err
		}); err != nil {
			return rows, fmt.Errorf("bench: aging day %d: %w", day, err)
		}
		rows = append(rows, row)
		if _, err := reader.Credit(ctx, abacus.DefaultLedgerNamespace, oneLedger, 1, ""); err != nil {
			return rows, fmt.Errorf("bench: aging day %d: %w", day, err)
		}
		for _, l := range []struct {
			name, series string
			want         int64
		}{{busyLedger, "ledger, an actor per writer", hotWant}, {oneLedger, "ledger, one actor", int64(day)}} {
			v, err := reader.LedgerValue(ctx, abacus.DefaultLedgerNamespace, l.name)
			if err != nil {
				return rows, err
			}
			if v.Value != l.want {
				return rows, fmt.Errorf("bench: aging day %d: %s reads %d, want %d", day, l.series, v.Value, l.want)
			}
			picker, err := NewPicker([]string{l.name}, max(o.Concurrency, 1), 0)
			if err != nil {
				return rows, err
			}
			row := s.measureWith(ctx, o, Row{
				Scenario: fmt.Sprintf("aging day %d: %s", day, l.series), Kind: "aging_read",
				Model: ModelLedger, Via: "library", Counters: 1, Day: day, Series: l.series,
			}, LedgerReads(reader, abacus.DefaultLedgerNamespace, picker))
			row.Check = fmt.Sprintf("ok: read %d from %s", l.want, plural(v.Actors, "actor row"))
			row.Collection = collections[l.name]
			if v.Folds > 0 {
				row.Check += fmt.Sprintf(" and a base that %s built", plural(int(v.Folds), "fold"))
			}
			if row.Trace, err = s.traceAgingRead(ctx, func(ctx context.Context) error {
				_, err := reader.LedgerValue(ctx, abacus.DefaultLedgerNamespace, l.name)
				return err
			}); err != nil {
				return rows, fmt.Errorf("bench: aging day %d: %w", day, err)
			}
			rows = append(rows, row)
		}
	}
	err = native(days)
	return rows, err
}

// Collection is what one day's collection of an aging row's counter or
// ledger did: a sharded counter's GC, an events counter's rollup, a
// ledger's fold. A collection that slows down as the counter ages, or
// falls further behind, is aging as surely as a slower read.
type Collection struct {
	// Took is the collection's real time, retries of a skipped one
	// included.
	Took time.Duration `json:"took_ns"`
	// Folded is what it folded: shards for a sharded counter, events for
	// an events counter; for a ledger 1 when the fold moved the cut, else
	// 0 (a fold reports no count of actors).
	Folded int `json:"folded"`
	// Behind is how far the folded state ends before the simulated now:
	// the latest death of a shard folded into the tally, the rollup's
	// epoch, the birth time of the ledger's cut. 0 when nothing was
	// folded yet. By design it is at least the GC grace (24 h), the
	// accept window plus the rollup delay (65 min), and the fold age
	// (about 51 h); more than a day beyond that means collection fell
	// behind.
	Behind time.Duration `json:"behind_ns"`
}

// shardsBehind is how far before now the tally of a sharded counter of
// the default namespace ends: the latest death of a shard folded into it.
// It reads the driver under the counter's own name, which is the stored
// one while the namespace has no TTL and the counter was never deleted,
// as in this scenario.
func (s *suite) shardsBehind(ctx context.Context, now time.Time, counter string) (time.Duration, error) {
	set, err := s.store.ReadShards(ctx, &driver.ReadShardsParams{Namespace: abacus.DefaultNamespace, Counter: counter})
	if err != nil {
		return 0, fmt.Errorf("reading the shards of %s: %w", counter, err)
	}
	if set.Tally == nil {
		return 0, nil
	}
	// The tally's timestamp is one microsecond past the latest death
	// folded into it.
	return now.Sub(time.UnixMicro(set.Tally.Timestamp - 1)), nil
}

// rollupBehind is how far before now an events counter's rollup ends.
func (s *suite) rollupBehind(ctx context.Context, now time.Time, ns, counter string) (time.Duration, error) {
	rec, err := s.store.ReadEventCounter(ctx, &driver.ReadEventCounterParams{Namespace: ns, Counter: counter})
	if err != nil {
		return 0, fmt.Errorf("reading the record of %s: %w", counter, err)
	}
	if rec == nil || rec.Rollup == nil {
		return 0, nil
	}
	return now.Sub(time.UnixMicro(rec.Rollup.Epoch)), nil
}

// traceAgingRead makes one read of an aging row's counter or ledger with
// Cassandra's tracing on, and returns what the replicas reported: the rows
// and tombstones a read steps over, which latency alone cannot tell from
// the machine's load. On the embedded store it asks the driver instead
// (embedded.WithReadStats). Nil (with a warning) when the trace cannot be
// had (a store that writes no read events, as ScyllaDB does not): the
// row's measurement stands without it. A failed read still fails the run.
func (s *suite) traceAgingRead(ctx context.Context, read func(ctx context.Context) error) (*ReadTrace, error) {
	if s.native == nil {
		st := &embedded.ReadStats{}
		if err := read(embedded.WithReadStats(ctx, st)); err != nil {
			return nil, err
		}
		if st.Reads == 0 {
			s.log.Warn("bench: aging: the read counted nothing in the embedded driver")
			return nil, nil
		}
		return &ReadTrace{Live: st.Live, Tombstones: st.Tombstones, Points: st.Points, Replicas: 1}, nil
	}
	var readErr error
	tr, err := TraceReads(ctx, s.native.Session, func(ctx context.Context) error {
		readErr = read(ctx)
		return readErr
	})
	switch {
	case readErr != nil:
		return nil, readErr
	case err != nil:
		s.log.Warn("bench: aging: no trace of a read", "err", err)
		return nil, nil
	}
	return &tr, nil
}

// agingNames are the counters and ledger the aging scenario's writers
// write.
type agingNames struct {
	hot, cold, ledger string
	// events is an events counter in namespace eventsNS.
	eventsNS, events string
}

// agingWriters runs one simulated day's writer processes.
func (s *suite) agingWriters(ctx context.Context, clk clock.Clock, writers int, n agingNames) error {
	sem := make(chan struct{}, agingParallelism)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c, err := s.agingClient(ctx, clk)
			if err != nil {
				errs[w] = err
				return
			}
			defer s.stopClient(c)
			if errs[w] = c.Add(ctx, abacus.DefaultNamespace, n.hot, 1); errs[w] == nil && w%10 == 0 {
				errs[w] = c.Add(ctx, abacus.DefaultNamespace, n.cold, 1)
			}
			if errs[w] == nil {
				_, errs[w] = c.Credit(ctx, abacus.DefaultLedgerNamespace, n.ledger, 1, "")
			}
			if errs[w] == nil {
				errs[w] = c.Add(ctx, n.eventsNS, n.events, 1)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// agingClient is one process of the aging scenario on the simulated clock.
func (s *suite) agingClient(ctx context.Context, clk clock.Clock) (*abacus.Client, error) {
	return abacus.NewClient(ctx, abacus.Config{Driver: s.store, Clock: clk, GCInterval: -1, Logger: s.log})
}

// storedBytes is the size of the embedded store's files, or 0 on Cassandra
// (where the bench cannot see the nodes' disks).
func (s *suite) storedBytes() int64 {
	if s.dataDir == "" {
		return 0
	}
	var total int64
	_ = filepath.WalkDir(s.dataDir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			total += info.Size()
		}
		return nil
	})
	return total
}

// collectAttempts is how many times the aging scenario asks for a day's
// collection before it gives up. A collection reads and writes at ALL, so
// on a loaded cluster one replica's slow answer skips it; the day's next
// step needs the collection done, and a retry is as safe as the sweeper's
// next pass (folding is idempotent).
const collectAttempts = 3

// collectRetrying runs GC (a fold, or for an events counter its rollup) on
// one counter, again after a pause while it is skipped, and returns the
// last result.
func collectRetrying(ctx context.Context, c *abacus.Client, ns, name string) (abacus.GCResult, error) {
	var res abacus.GCResult
	for attempt := 1; attempt <= collectAttempts; attempt++ {
		var err error
		if res, err = c.GC(ctx, ns, name); err != nil || !res.Skipped {
			return res, err
		}
		if attempt < collectAttempts {
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(2 * time.Second):
			}
		}
	}
	return res, nil
}
