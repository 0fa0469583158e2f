package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/client"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/abacusdb/abacus/internal/randomid"
	"github.com/abacusdb/abacus/internal/server"
	"github.com/abacusdb/abacus/internal/sharded"
)

// Scenario groups accepted in Config.Scenarios.
const (
	// ScenarioIncrements: for every Config.Counters setting, increments of
	// each Config.Models model (the raw CQL native counter included on
	// Cassandra) and the plain-insert ceiling.
	ScenarioIncrements = "increments"
	// ScenarioHTTP: sharded increments through an in-process HTTP server on
	// 127.0.0.1, driven by the Go client.
	ScenarioHTTP = "http"
	// ScenarioReads: for each Config.ReadShards value n, reads of a sharded
	// counter with n live shards and of one whose n final shards GC has
	// folded into its tally; then reads of a native counter.
	ScenarioReads = "reads"
	// ScenarioEventReads: for each Config.EventReads value n, reads of an
	// events counter with n un-rolled events, then after a rollup.
	ScenarioEventReads = "event-reads"
	// ScenarioAging: Config.AgingDays simulated days of a hot and a cold
	// sharded counter written by Config.AgingWriters restarting processes,
	// folded by GC every day and read after it (aging.go). Not run unless
	// asked for.
	ScenarioAging = "aging"
	// ScenarioSteady: events counters driven at fixed rates
	// (Config.SteadyRates, Config.SteadyCounters) while readers measure
	// full, bounded-staleness and native reads and the rollup lag
	// (steady.go). Not run unless asked for.
	ScenarioSteady = "steady"
)

// Scenarios lists every scenario group in the order RunSuite runs them.
var Scenarios = []string{ScenarioIncrements, ScenarioHTTP, ScenarioReads, ScenarioEventReads, ScenarioAging, ScenarioSteady}

// DefaultScenarios are the groups run when Config.Scenarios is empty: all
// but the aging and steady scenarios, which take minutes of their own.
var DefaultScenarios = []string{ScenarioIncrements, ScenarioHTTP, ScenarioReads, ScenarioEventReads}

// DefaultKeyspace is the keyspace the benchmark uses on Cassandra. It is
// kept apart from the product's "abacus" so benchmark rows never mix with
// real data.
const DefaultKeyspace = "abacus_bench"

// Config configures RunSuite. Zero fields take the documented defaults.
type Config struct {
	// Cassandra are contact points ("host" or "host:port"). Empty means the
	// embedded store in DataDir; the native baselines then cannot run and
	// are left out.
	Cassandra []string

	// Keyspace on Cassandra, created if missing. Default "abacus_bench".
	Keyspace string

	// ReplicationFactor of the keyspace when RunSuite creates it. Default 1.
	ReplicationFactor int

	// Consistency of every read and write, sharded and native alike.
	// Default QUORUM.
	Consistency driver.Consistency

	// DataDir holds the embedded store. Default: a new temporary directory,
	// removed at the end. A directory given here is kept.
	DataDir string

	// NoSync makes the embedded store acknowledge writes before fsync (see
	// embedded.Config.NoSync). Default false, like the server.
	NoSync bool

	// Options of every measured run.
	Options Options

	// Counters: each value is one increments setting, updates spread
	// over that many counters (see HotFraction). Default 1 and 100.
	Counters []int

	// HotFraction is the share of the increments scenario's calls that go
	// to the first counter of each setting; the rest are uniform over the
	// others. 0 (the default) is uniform over all counters. In [0, 1].
	HotFraction float64

	// ReadRatio is the share of the increments scenario's calls that are
	// reads of the model under test (Client.Get, Client.LedgerValue, a CQL
	// SELECT) on the same counters, instead of writes. Rows then report
	// reads apart from writes, and the read-back check counts acknowledged
	// writes only. 0 (the default) is writes only. In [0, 1).
	ReadRatio float64

	// Scenarios to run, from Scenarios. Default: all of them.
	Scenarios []string

	// ReadShards: the numbers of shards the read scenarios give their
	// counters: live ones that every read merges, and final ones that GC
	// folds before the reads. Default 1, 100, 1000.
	ReadShards []int

	// Models are measured in the increments scenario, for each Counters
	// setting, in the order of Models (sharded first, the plain-insert
	// ceiling last). ModelNative measures the library's native model and,
	// on Cassandra, the raw CQL counter baseline. Default: all. An empty
	// (non-nil) slice measures none.
	Models []string

	// EventReads: the numbers of un-rolled events the event-reads scenario
	// gives its counters. Default 10, 1000, 100000.
	EventReads []int

	// Sweep, when set, measures every increments row at each of these
	// concurrencies in turn (ascending) and marks the sustainable one: the
	// highest throughput whose p99 stays within SweepP99. It stops early
	// once throughput rises less than SweepGain over the best so far, or
	// p99 passes the limit. Ratios compare sustainable rows. Default: none
	// (every row at Options.Concurrency).
	Sweep []int
	// SweepP99 is the write p99 a sustainable level must stay within.
	// Default 100ms.
	SweepP99 time.Duration
	// SweepGain is the least relative rise in throughput that makes the
	// sweep try the next level. Default 0.05.
	SweepGain float64

	// AgingDays is how many simulated days the aging scenario runs.
	// Default 30.
	AgingDays int
	// AgingWriters is how many writer processes start on every simulated
	// day of the aging scenario. Default 100.
	AgingWriters int
	// AgingReadTime is how long each aging row reads, after a fifth of it
	// as warm-up. Default 1s.
	AgingReadTime time.Duration

	// SteadyRates are the steady scenario's rates: for each, one events
	// counter driven at that many increments per second for
	// Options.Duration (after Options.Warmup). Default (nil) 1000 and
	// 10,000; an empty slice, or one rate of 0, runs none (for
	// SteadyCounters alone).
	SteadyRates []int
	// SteadyCounters, when above 0, adds a steady run of that many events
	// counters at one increment a second each. Default 0: none.
	SteadyCounters int
	// SteadyReadEvery is how often each steady reader reads. Default
	// 100ms.
	SteadyReadEvery time.Duration
	// SteadyStaleness is the bound of the steady scenario's
	// bounded-staleness reads (Client.GetWithin). Default 2s.
	SteadyStaleness time.Duration
	// SteadyRollupCost is how many increments the rollup-cost phase of
	// each one-counter steady run writes, at the run's rate, before
	// rolling them up, to measure the store CPU of rollups apart from
	// that of writes (see SteadyRollupCost). Default 60,000; negative:
	// no such phase.
	SteadyRollupCost int

	// ShardBatch is the library's MaxShardBatch in the scenarios' clients:
	// how many shard writes, of any counters, one request carries. Default
	// (0): the library's.
	ShardBatch int
	// EventBatch is the library's MaxEventBatch: how many event writes,
	// of any counters, one request carries. Default (0): the library's.
	EventBatch int

	// StorePID, when not 0, is the process id of a Cassandra node on this
	// machine; its CPU use is recorded per scenario (Linux only), which
	// gives throughput per store core, a figure that survives a noisy,
	// shared machine better than raw throughput.
	StorePID int

	// Progress receives a line per scenario as it runs. Default: discarded.
	Progress io.Writer

	// ProgressBar redraws each row's line on Progress with a bar while it
	// runs; only for a terminal (it writes carriage returns and an ANSI
	// erase-line sequence).
	ProgressBar bool

	// Command is the command line that started the run, recorded in the
	// report. Optional.
	Command string

	// Logger receives warnings from the store, the library and the server.
	// Default: warnings and errors to standard error.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Keyspace == "" {
		c.Keyspace = DefaultKeyspace
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = 1
	}
	if c.Consistency == driver.Default {
		c.Consistency = driver.Quorum
	}
	c.Options = c.Options.withDefaults()
	if len(c.Counters) == 0 {
		c.Counters = []int{1, 100}
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = DefaultScenarios
	}
	if c.SweepP99 == 0 {
		c.SweepP99 = 100 * time.Millisecond
	}
	if c.SweepGain == 0 {
		c.SweepGain = 0.05
	}
	if c.AgingDays == 0 {
		c.AgingDays = 30
	}
	if c.AgingWriters == 0 {
		c.AgingWriters = 100
	}
	if c.AgingReadTime == 0 {
		c.AgingReadTime = time.Second
	}
	if len(c.ReadShards) == 0 {
		c.ReadShards = []int{1, 100, 1000}
	}
	switch {
	case c.SteadyRates == nil:
		c.SteadyRates = slices.Clone(DefaultSteadyRates)
	case slices.Equal(c.SteadyRates, []int{0}):
		c.SteadyRates = []int{}
	}
	if c.SteadyReadEvery == 0 {
		c.SteadyReadEvery = DefaultSteadyReadEvery
	}
	if c.SteadyStaleness == 0 {
		c.SteadyStaleness = DefaultSteadyStaleness
	}
	switch {
	case c.SteadyRollupCost == 0:
		c.SteadyRollupCost = DefaultSteadyRollupCost
	case c.SteadyRollupCost < 0:
		c.SteadyRollupCost = -1
	}
	if c.Models == nil {
		c.Models = Models
	}
	if len(c.EventReads) == 0 {
		c.EventReads = []int{10, 1000, 100_000}
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return c
}

// Validate reports what is wrong with c (after defaults), without opening
// anything. RunSuite calls it too.
func (c Config) Validate() error { return c.withDefaults().validate() }

func (c Config) validate() error {
	var errs []error
	for _, s := range c.Scenarios {
		if !slices.Contains(Scenarios, s) {
			errs = append(errs, fmt.Errorf("unknown scenario %q (want %s)", s, strings.Join(Scenarios, ", ")))
		}
	}
	for _, n := range c.Counters {
		if n < 1 {
			errs = append(errs, fmt.Errorf("counters must be at least 1, got %d", n))
		}
	}
	for _, n := range c.ReadShards {
		if n < 1 {
			errs = append(errs, fmt.Errorf("read shards must be at least 1, got %d", n))
		}
	}
	for _, m := range c.Models {
		if !slices.Contains(Models, m) {
			errs = append(errs, fmt.Errorf("unknown model %q (want %s)", m, strings.Join(Models, ", ")))
		}
	}
	for _, n := range c.EventReads {
		if n < 1 || n > 10_000_000 {
			errs = append(errs, fmt.Errorf("event reads must be from 1 to 10,000,000 events, got %d", n))
		}
	}
	if !(c.HotFraction >= 0 && c.HotFraction <= 1) { // NaN fails too
		errs = append(errs, fmt.Errorf("hot fraction must be from 0 to 1, got %v", c.HotFraction))
	}
	if !(c.ReadRatio >= 0 && c.ReadRatio < 1) {
		errs = append(errs, fmt.Errorf("read ratio must be at least 0 and below 1, got %v", c.ReadRatio))
	}
	if !strictlyRising(c.Sweep) || slices.ContainsFunc(c.Sweep, func(n int) bool { return n < 1 || n > 100_000 }) {
		errs = append(errs, fmt.Errorf("sweep concurrencies must ascend, each from 1 to 100,000, got %v", c.Sweep))
	}
	if c.SweepP99 < 0 {
		errs = append(errs, fmt.Errorf("sweep p99 limit must not be negative, got %v", c.SweepP99))
	}
	if !(c.SweepGain > 0 && c.SweepGain < 10) {
		errs = append(errs, fmt.Errorf("sweep gain must be above 0 and below 10, got %v", c.SweepGain))
	}
	if c.AgingDays < 1 || c.AgingDays > 3650 {
		errs = append(errs, fmt.Errorf("aging days must be from 1 to 3,650, got %d", c.AgingDays))
	}
	if c.AgingWriters < 1 || c.AgingWriters > 10_000 {
		errs = append(errs, fmt.Errorf("aging writers must be from 1 to 10,000, got %d", c.AgingWriters))
	}
	if c.AgingReadTime < 0 {
		errs = append(errs, fmt.Errorf("aging read time must not be negative, got %v", c.AgingReadTime))
	}
	for _, r := range c.SteadyRates {
		if r < 1 || r > steadyMaxRate {
			errs = append(errs, fmt.Errorf("steady rates must be from 1 to %d increments/s (or one rate of 0 for none), got %v", steadyMaxRate, c.SteadyRates))
			break
		}
	}
	if c.SteadyCounters < 0 || c.SteadyCounters > steadyMaxRate {
		errs = append(errs, fmt.Errorf("steady counters must be from 0 (none) to %d, got %d", steadyMaxRate, c.SteadyCounters))
	}
	if slices.Contains(c.Scenarios, ScenarioSteady) && len(c.SteadyRates) == 0 && c.SteadyCounters == 0 {
		errs = append(errs, errors.New("the steady scenario has nothing to run: no steady rate and no steady counters"))
	}
	if c.SteadyReadEvery < time.Millisecond || c.SteadyReadEvery > time.Minute {
		errs = append(errs, fmt.Errorf("steady read interval must be from 1ms to 1m, got %v", c.SteadyReadEvery))
	}
	if c.SteadyStaleness <= 0 || c.SteadyStaleness > time.Hour {
		errs = append(errs, fmt.Errorf("steady staleness must be above 0 and at most 1h, got %v", c.SteadyStaleness))
	}
	if c.SteadyRollupCost > steadyMaxRollupCost {
		errs = append(errs, fmt.Errorf("steady rollup cost must be at most %d events (or negative for none), got %d", steadyMaxRollupCost, c.SteadyRollupCost))
	}
	if c.ReplicationFactor < 1 {
		errs = append(errs, fmt.Errorf("replication factor must be at least 1, got %d", c.ReplicationFactor))
	}
	if c.StorePID < 0 {
		errs = append(errs, fmt.Errorf("store pid must not be negative, got %d", c.StorePID))
	}
	if c.Consistency > driver.Any {
		errs = append(errs, fmt.Errorf("unknown consistency %v", c.Consistency))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// strictlyRising reports whether every value is above the one before: a
// sweep level given twice would share its counters with itself.
func strictlyRising(v []int) bool {
	for i := 1; i < len(v); i++ {
		if v[i] <= v[i-1] {
			return false
		}
	}
	return true
}

// suite is one RunSuite call: the open store and what the scenarios share.
type suite struct {
	cfg    Config
	log    *slog.Logger
	store  driver.Driver
	native *Native // nil without Cassandra
	plain  Plain   // nil unless ModelPlain is measured
	runID  string  // makes this run's counter names unique in a reused keyspace
	tmpDir string  // removed by close
	// dataDir is the embedded store's directory; empty on Cassandra.
	dataDir string
	// nativeReadCounters counts the native counters made for reads.
	nativeReadCounters int
}

// RunSuite opens the store, runs the configured scenarios one after
// another and returns their results. On error it returns the rows measured
// so far together with the error.
func RunSuite(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &suite{cfg: cfg, log: cfg.Logger, runID: randomid.Hex(4)}
	rep := &Report{Env: environment(cfg), Options: cfg.Options, HotFraction: cfg.HotFraction, ReadRatio: cfg.ReadRatio, Command: cfg.Command, Rows: []Row{}}
	if err := s.open(ctx, &rep.Env); err != nil {
		return nil, err
	}
	defer s.close()

	err := s.run(ctx, rep)
	rep.Env.LoadAvgAfter = loadAvg()
	rep.Finished = time.Now().UTC()
	rep.Ratios = ratios(rep.Rows)
	return rep, err
}

func (s *suite) run(ctx context.Context, rep *Report) error {
	add := func(r Row, err error) error {
		if err != nil {
			return err
		}
		rep.Rows = append(rep.Rows, r)
		return ctx.Err()
	}
	// addAll keeps the rows a scenario measured, even when it stopped on
	// an error.
	addAll := func(rows []Row, err error) error {
		rep.Rows = append(rep.Rows, rows...)
		if err != nil {
			return err
		}
		return ctx.Err()
	}
	for _, sc := range s.cfg.Scenarios {
		switch sc {
		case ScenarioIncrements:
			// Every model runs once per setting before the next setting,
			// so that slow drift of the machine (compactions, other builds)
			// hits the rows compared with each other alike.
			for _, n := range s.cfg.Counters {
				for _, m := range s.cfg.Models {
					var runs []func() (Row, error)
					switch m {
					case ModelPlain:
						runs = append(runs, func() (Row, error) { return s.plainIncrements(ctx, n) })
					case ModelNative:
						// The raw CQL update first, then the library's
						// native model built on it.
						if s.native != nil {
							runs = append(runs, func() (Row, error) { return s.nativeIncrements(ctx, n) })
						}
						runs = append(runs, func() (Row, error) { return s.modelIncrements(ctx, m, n) })
					default:
						runs = append(runs, func() (Row, error) { return s.modelIncrements(ctx, m, n) })
					}
					for _, run := range runs {
						if err := addAll(s.swept(run)); err != nil {
							return err
						}
					}
				}
			}
		case ScenarioHTTP:
			for _, n := range s.cfg.Counters {
				if err := add(s.httpIncrements(ctx, n)); err != nil {
					return err
				}
			}
		case ScenarioReads:
			for _, n := range s.cfg.ReadShards {
				if err := add(s.liveReads(ctx, n)); err != nil {
					return err
				}
			}
			for _, n := range s.cfg.ReadShards {
				if err := add(s.foldedReads(ctx, n)); err != nil {
					return err
				}
			}
			if s.native != nil {
				if err := add(s.nativeReads(ctx, slices.Max(s.cfg.ReadShards))); err != nil {
					return err
				}
			}
		case ScenarioEventReads:
			for _, n := range s.cfg.EventReads {
				if err := addAll(s.eventsReads(ctx, n)); err != nil {
					return err
				}
			}
			if s.native != nil && !slices.Contains(s.cfg.Scenarios, ScenarioReads) {
				if err := add(s.nativeReads(ctx, 1)); err != nil {
					return err
				}
			}
		case ScenarioAging:
			if err := addAll(s.aging(ctx)); err != nil {
				return err
			}
		case ScenarioSteady:
			rows, runs, err := s.steady(ctx)
			rep.Steady = append(rep.Steady, runs...)
			if err := addAll(rows, err); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *suite) open(ctx context.Context, env *Env) error {
	if len(s.cfg.Cassandra) > 0 {
		d, err := cassandra.Open(ctx, cassandra.Config{
			Hosts:            s.cfg.Cassandra,
			Keyspace:         s.cfg.Keyspace,
			Replication:      cassandra.Replication{ReplicationFactor: s.cfg.ReplicationFactor},
			ReadConsistency:  s.cfg.Consistency,
			WriteConsistency: s.cfg.Consistency,
			Logger:           s.log,
		})
		if err != nil {
			return err
		}
		s.store = d
		cl, err := GocqlConsistency(s.cfg.Consistency)
		if err != nil {
			return errors.Join(err, d.Close())
		}
		s.native = NewNative(d, cl)
		if err := s.native.CreateTable(ctx); err != nil {
			return errors.Join(err, d.Close())
		}
		if slices.Contains(s.cfg.Models, ModelPlain) && slices.Contains(s.cfg.Scenarios, ScenarioIncrements) {
			pl := NewCQLPlain(d, cl)
			if err := pl.CreateTable(ctx); err != nil {
				return errors.Join(err, d.Close())
			}
			s.plain = pl
		}
		var version string
		if err := d.Session().Query("SELECT release_version FROM system.local").ScanContext(ctx, &version); err == nil {
			env.StoreVersion = version
		}
		return nil
	}
	dir := s.cfg.DataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "abacus-bench-*")
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		s.tmpDir, dir = tmp, tmp
	}
	env.DataDir = dir
	s.dataDir = dir
	env.NoSync = s.cfg.NoSync
	d, err := embedded.Open(ctx, embedded.Config{Dir: dir, NoSync: s.cfg.NoSync, Logger: s.log})
	if err != nil {
		s.close()
		return err
	}
	s.store = d
	if slices.Contains(s.cfg.Models, ModelPlain) && slices.Contains(s.cfg.Scenarios, ScenarioIncrements) {
		// Next to the store's directory, on the same disk: the store holds
		// its own directory locked. Always removed, even with --data.
		pdir, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), "abacus-bench-plain-*")
		if err != nil {
			s.close()
			return fmt.Errorf("bench: %w", err)
		}
		pl, err := OpenPebblePlain(pdir, s.cfg.NoSync, true, s.log)
		if err != nil {
			_ = os.RemoveAll(pdir)
			s.close()
			return err
		}
		s.plain = pl
	}
	return nil
}

func (s *suite) close() {
	if s.plain != nil {
		if err := s.plain.Close(); err != nil {
			s.log.Warn("bench: closing the plain-insert store", "err", err)
		}
	}
	if s.store != nil {
		if err := s.store.Close(); err != nil {
			s.log.Warn("bench: closing the store", "err", err)
		}
	}
	if s.tmpDir != "" {
		if err := os.RemoveAll(s.tmpDir); err != nil {
			s.log.Warn("bench: removing the temporary store", "dir", s.tmpDir, "err", err)
		}
	}
}

// commits counts the shard writes of one client through the sharded hooks,
// to report how many updates each write carried (group commit).
type commits struct {
	writes, updates, failed atomic.Uint64
	latency                 atomic.Int64 // summed over all writes, ns
}

func (c *commits) hooks(next sharded.Hooks) sharded.Hooks {
	h := next
	h.Commit = func(n uint64, d time.Duration, err error) {
		c.latency.Add(int64(d))
		if err != nil {
			c.failed.Add(1)
		} else {
			c.writes.Add(1)
			c.updates.Add(n)
		}
		if next.Commit != nil {
			next.Commit(n, d, err)
		}
	}
	return h
}

func (c *commits) record(r *Row) {
	r.ShardWrites = c.writes.Load()
	r.FailedShardWrites = c.failed.Load()
	if r.ShardWrites > 0 {
		r.UpdatesPerWrite = float64(c.updates.Load()) / float64(r.ShardWrites)
	}
	if n := r.ShardWrites + r.FailedShardWrites; n > 0 {
		r.ShardWriteMean = time.Duration(c.latency.Load() / int64(n))
	}
}

// newClient returns a fresh library client, so every scenario starts with
// no mutators and its own counters. The GC sweeper stays off: it would add
// load that has nothing to do with the scenario.
func (s *suite) newClient(ctx context.Context, hooks sharded.Hooks) (*abacus.Client, error) {
	return abacus.NewClient(ctx, abacus.Config{
		Driver:        s.store,
		GCInterval:    -1,
		Logger:        s.log,
		ShardedHooks:  hooks,
		MaxShardBatch: s.cfg.ShardBatch,
		MaxEventBatch: s.cfg.EventBatch,
	})
}

func (s *suite) stopClient(c *abacus.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		s.log.Warn("bench: stopping a client", "err", err)
	}
}

func (s *suite) names(kind string, n int) []string {
	return CounterNames(fmt.Sprintf("bench-%s-%s%d", s.runID, kind, n), n)
}

// picker returns a picker over n new counter names, skewed by the
// configured hot fraction.
func (s *suite) picker(kind string, n int) (*Picker, error) {
	return NewPicker(s.names(kind, n), s.cfg.Options.Concurrency, s.cfg.HotFraction)
}

// measure runs op under the suite's options and fills in row's results.
func (s *suite) measure(ctx context.Context, row Row, op Op) Row {
	return s.measureWith(ctx, s.cfg.Options, row, op)
}

// measureWith is measure under other options (another concurrency).
func (s *suite) measureWith(ctx context.Context, o Options, row Row, op Op) Row {
	return s.measureWorkload(ctx, o, row, Workload{Write: op})
}

// rssInterval is how often a row's memory is sampled.
const rssInterval = 100 * time.Millisecond

// measureWorkload runs wl and fills in row's results, its CPU and memory.
func (s *suite) measureWorkload(ctx context.Context, o Options, row Row, wl Workload) Row {
	o = o.withDefaults()
	label := fmt.Sprintf("%-34s %-15s counters=%-4d", row.Scenario, row.label(), row.Counters)
	pr := startProgress(s.cfg.Progress, s.cfg.ProgressBar, label, o.Warmup, o.Duration)
	row.Started = time.Now().UTC()
	before := sampleCPU(s.cfg.StorePID)
	rss := startRSS(rssInterval)
	row.Result = RunWorkload(ctx, o, wl)
	if row.Kind == "increments" {
		row.HotFraction = s.cfg.HotFraction
		if wl.Read != nil {
			row.ReadRatio = wl.ReadRatio
		}
	}
	row.RSSPeak, row.RSSEnd = rss.Stop()
	row.Concurrency = o.Concurrency
	c := sampleCPU(s.cfg.StorePID).coresSince(before)
	row.ProcessCPU, row.HostCPU, row.StoreCPU = c.proc, c.host, c.store
	if row.Kind == "increments" || row.Kind == "http" {
		row.LatencyCDF = ThinCDF(row.Latency.CDF(), cdfStep)
	}
	res := fmt.Sprintf("%.0f ops/s, p50 %s, p99 %s, errors %d", row.OpsPerSec, fmtDuration(row.P50), fmtDuration(row.P99), row.Errors)
	if row.ReadOps+row.ReadErrors > 0 {
		res += fmt.Sprintf("; reads %.0f/s, p50 %s, p99 %s, errors %d", row.ReadOpsPerSec, fmtDuration(row.ReadP50), fmtDuration(row.ReadP99), row.ReadErrors)
	}
	pr.finish(res)
	return row
}

// cdfStep thins the latency CDF kept in each row (see ThinCDF): at most
// a point per 0.04 nines or 0.04 decades of latency, a couple of hundred
// points for a row, finer than the charts draw.
const cdfStep = 0.04

// acknowledged is how many calls succeeded over the whole run, warm-up
// included: every one of them applied an update.
func acknowledged(r Result) uint64 { return r.Ops + r.WarmupOps - r.WarmupErrors }

// checkCount compares a counter total read back after a run with the
// updates the run saw acknowledged. With no errors they must be equal.
// A failed call may or may not have been applied, so errors widen the
// acceptable range; a total outside it is a lost or double-counted update.
func checkCount(got int64, r Result) string {
	ack := acknowledged(r)
	unknown := r.Errors + r.WarmupErrors
	switch {
	case got >= 0 && uint64(got) >= ack && uint64(got) <= ack+unknown:
		if unknown == 0 {
			return fmt.Sprintf("ok: counted %d = acknowledged", got)
		}
		return fmt.Sprintf("ok: counted %d, acknowledged %d, %d failed calls", got, ack, unknown)
	default:
		return fmt.Sprintf("MISMATCH: counted %d, acknowledged %d, %d failed calls", got, ack, unknown)
	}
}

// nativeIncrements measures the baseline: Cassandra's own counter update
// in CQL, on the store driver's session.
func (s *suite) nativeIncrements(ctx context.Context, n int) (Row, error) {
	p, err := s.picker("native", n)
	if err != nil {
		return Row{}, err
	}
	wl := Workload{Write: NativeIncrements(s.native, p), Read: NativePickedReads(s.native, p), ReadRatio: s.cfg.ReadRatio}
	row := s.measureWorkload(ctx, s.cfg.Options, Row{Scenario: "increments", Kind: "increments", Model: ModelNative, Via: "cql", Counters: n}, wl)
	row.Check = s.check(ctx, row.Result, func() (int64, error) {
		return sumOver(p.Names(), func(k string) (int64, error) { return s.native.Get(ctx, k) })
	})
	return row, nil
}

// plainIncrements measures the plain-insert ceiling: a new row per call.
func (s *suite) plainIncrements(ctx context.Context, n int) (Row, error) {
	p, err := s.picker("plain", n)
	if err != nil {
		return Row{}, err
	}
	wl := Workload{Write: PlainInserts(s.plain, p, s.cfg.Options.Concurrency), Read: PlainReads(s.plain, p), ReadRatio: s.cfg.ReadRatio}
	row := s.measureWorkload(ctx, s.cfg.Options, Row{Scenario: "increments", Kind: "increments", Model: ModelPlain, Via: s.plain.Via(), Counters: n}, wl)
	row.Check = s.check(ctx, row.Result, func() (int64, error) {
		return sumOver(p.Names(), func(k string) (int64, error) { return s.plain.Count(ctx, k) })
	})
	return row, nil
}

// sumOver adds up read(name) over names; the first failed read is the
// answer.
func sumOver(names []string, read func(name string) (int64, error)) (int64, error) {
	var total int64
	for _, k := range names {
		v, err := read(k)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

func (s *suite) check(ctx context.Context, r Result, total func() (int64, error)) string {
	if ctx.Err() != nil {
		return "not checked: interrupted"
	}
	got, err := total()
	if err != nil {
		return "not checked: " + err.Error()
	}
	return checkCount(got, r)
}

func (s *suite) httpIncrements(ctx context.Context, n int) (Row, error) {
	// Wired like `abacus serve`: the engine's hooks feed the server's
	// Prometheus registry, so the measured server does all its usual work.
	reg := prometheus.NewRegistry()
	var cm commits
	c, err := s.newClient(ctx, cm.hooks(server.Hooks(reg)))
	if err != nil {
		return Row{}, err
	}
	srv, err := server.New(server.Config{Client: c, Logger: s.log, Registry: reg, ShutdownTimeout: 30 * time.Second})
	if err != nil {
		s.stopClient(c)
		return Row{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.stopClient(c)
		return Row{}, fmt.Errorf("bench: listen on 127.0.0.1: %w", err)
	}
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, ln) }() // Serve starts and stops c
	defer func() {
		stopServing()
		if err := <-served; err != nil {
			s.log.Warn("bench: HTTP server shutdown", "err", err)
		}
	}()

	// Go's default transport keeps only 2 idle connections per host; with
	// 64 callers it would open and close a connection for most requests and
	// measure TCP set-up (and run out of ports) instead of the server.
	tr := &http.Transport{
		Proxy:               nil, // loopback; never through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        s.cfg.Options.Concurrency,
		MaxIdleConnsPerHost: s.cfg.Options.Concurrency,
		IdleConnTimeout:     90 * time.Second,
	}
	defer tr.CloseIdleConnections()
	hc, err := client.New("http://"+ln.Addr().String(),
		client.WithHTTPClient(&http.Client{Transport: tr}), client.WithTimeout(15*time.Second))
	if err != nil {
		return Row{}, err
	}
	if err := waitHealthy(ctx, hc); err != nil {
		return Row{}, err
	}
	p, err := s.picker("http", n)
	if err != nil {
		return Row{}, err
	}
	row := s.measure(ctx, Row{Scenario: "increments via HTTP", Kind: "http", Model: ModelSharded, Via: "http", Counters: n}, HTTPIncrements(hc, abacus.DefaultNamespace, p))
	cm.record(&row)
	row.Check = s.check(ctx, row.Result, func() (int64, error) {
		return sumModel(ctx, c, ModelSharded, abacus.DefaultNamespace, p.Names())
	})
	return row, nil
}

func waitHealthy(ctx context.Context, hc *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		err := hc.Healthz(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: the in-process HTTP server did not become healthy: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// seededClient writes n shards of the counter name in the default
// namespace, expiring at expires, straight to the store, and returns a new
// client to read them; the caller stops it.
func (s *suite) seededClient(ctx context.Context, name string, n int, expires time.Time) (*abacus.Client, error) {
	if err := SeedShards(ctx, s.store, abacus.DefaultNamespace, name, n, expires.UnixMicro(), driver.Default); err != nil {
		return nil, err
	}
	return s.newClient(ctx, sharded.Hooks{})
}

// liveReads measures reads of a counter with n live shards: shards whose
// mutators have not died, so GC cannot fold them and every read merges n.
func (s *suite) liveReads(ctx context.Context, n int) (Row, error) {
	name := s.names("live", n)[0]
	c, err := s.seededClient(ctx, name, n, time.Now().Add(24*time.Hour))
	if err != nil {
		return Row{}, err
	}
	defer s.stopClient(c)
	if err := expectValue(ctx, c, name, int64(n), n); err != nil {
		return Row{}, err
	}
	label := fmt.Sprintf("read, %d live shards", n)
	if n == 1 {
		label = "read, 1 live shard"
	}
	row := s.measure(ctx, Row{Scenario: label, Kind: "read", Model: "sharded", Via: "library", Counters: 1, Shards: n}, ShardedReads(c, abacus.DefaultNamespace, name))
	row.Check = fmt.Sprintf("ok: read %d from %d shards before the run", n, n)
	return row, nil
}

// foldedReads measures reads of a counter whose n shards were final and
// have been folded by Client.GC: the read finds the tally and no shard.
func (s *suite) foldedReads(ctx context.Context, n int) (Row, error) {
	name := s.names("folded", n)[0]
	// Final means expires_at older than the GC grace (24h by default).
	c, err := s.seededClient(ctx, name, n, time.Now().Add(-48*time.Hour))
	if err != nil {
		return Row{}, err
	}
	defer s.stopClient(c)
	gc, err := c.GC(ctx, abacus.DefaultNamespace, name)
	if err != nil {
		return Row{}, err
	}
	if gc.Skipped || gc.Folded != n {
		return Row{}, fmt.Errorf("bench: GC of %s folded %d of %d shards (skipped %v: %v)", name, gc.Folded, n, gc.Skipped, gc.Err)
	}
	if err := expectValue(ctx, c, name, int64(n), 0); err != nil {
		return Row{}, err
	}
	row := s.measure(ctx, Row{Scenario: fmt.Sprintf("read after GC of %d shards", n), Kind: "read_after_gc", Model: "sharded", Via: "library", Counters: 1, Shards: 0}, ShardedReads(c, abacus.DefaultNamespace, name))
	row.Check = fmt.Sprintf("ok: GC folded %d shards; read %d from the tally and 0 shards", n, n)
	return row, nil
}

func (s *suite) nativeReads(ctx context.Context, v int) (Row, error) {
	return s.nativeReadsWith(ctx, s.cfg.Options, v)
}

// nativeReadsWith measures reads of a new native counter holding v, under
// options o.
func (s *suite) nativeReadsWith(ctx context.Context, o Options, v int) (Row, error) {
	// Every call reads a counter of its own: the aging scenario measures
	// native reads more than once, and each checks the value it added.
	s.nativeReadCounters++
	k := s.names(fmt.Sprintf("nativeread%d-", s.nativeReadCounters), 1)[0]
	if err := s.native.Add(ctx, k, int64(v)); err != nil {
		return Row{}, fmt.Errorf("bench: seeding native counter: %w", err)
	}
	got, err := s.native.Get(ctx, k)
	if err != nil {
		return Row{}, fmt.Errorf("bench: reading native counter: %w", err)
	}
	if got != int64(v) {
		return Row{}, fmt.Errorf("bench: native counter %s reads %d, want %d", k, got, v)
	}
	row := s.measureWith(ctx, o, Row{Scenario: "read", Kind: "read", Model: "native", Via: "cql", Counters: 1}, NativeReads(s.native, k))
	row.Check = fmt.Sprintf("ok: read %d before the run", v)
	return row, nil
}

func expectValue(ctx context.Context, c *abacus.Client, name string, want int64, shards int) error {
	v, err := c.Get(ctx, abacus.DefaultNamespace, name)
	if err != nil {
		return err
	}
	if v.Value != want || v.Shards != shards {
		return fmt.Errorf("bench: counter %s reads %d from %d shards, want %d from %d", name, v.Value, v.Shards, want, shards)
	}
	return nil
}

func environment(cfg Config) Env {
	e := Env{
		Started:     time.Now().UTC(),
		GoVersion:   runtime.Version(),
		OS:          runtime.GOOS,
		Arch:        runtime.GOARCH,
		NumCPU:      runtime.NumCPU(),
		GOMAXPROCS:  runtime.GOMAXPROCS(0),
		Memory:      memTotal(),
		Store:       "embedded",
		Consistency: cfg.Consistency.String(),
		LoadAvg:     loadAvg(),
	}
	if len(cfg.Cassandra) > 0 {
		e.Store = "cassandra"
		e.Hosts = cfg.Cassandra
		e.Keyspace = cfg.Keyspace
		e.ReplicationFactor = cfg.ReplicationFactor
	}
	e.StorePID = cfg.StorePID
	return e
}
