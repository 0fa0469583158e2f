package server

import (
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/internal/sharded"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus collectors. Labels are kept to small
// sets (routes, status codes, error codes, models, and namespace names up
// to a limit): counter names, and namespace names past the limit, are
// unbounded and would blow up the series count.
type metrics struct {
	updates       *prometheus.CounterVec
	clockSkew     prometheus.Gauge
	ledgerUpdates *prometheus.CounterVec
	groupCommit   prometheus.Histogram
	shardWrite    prometheus.Histogram
	shardWriteErr prometheus.Counter
	readShards    prometheus.Histogram
	gcRuns        prometheus.Counter
	gcSkips       prometheus.Counter
	gcFolded      prometheus.Counter
	httpRequests  *prometheus.CounterVec
	httpSeconds   *prometheus.HistogramVec
	nsRequests    *prometheus.CounterVec
	modelSeconds  *prometheus.HistogramVec
	nsLabels      namespaceLabels
}

// register registers c, or returns the collector already registered under
// the same descriptors. That is what lets Hooks (called before the
// abacus.Client exists) and New (called after) share one set of collectors
// on one registry.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	// Only a programming error (conflicting descriptors) gets here.
	panic(err)
}

func newMetrics(reg prometheus.Registerer) *metrics {
	latency := prometheus.ExponentialBuckets(0.0005, 2, 16)
	return &metrics{
		clockSkew: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "abacus_clock_skew_seconds",
			Help: "This server's clock minus the store's at the last check (0 until measured; stores without a clock are not measured).",
		})),
		updates: newCounterVec(reg, "abacus_updates_total",
			"Counter updates received over HTTP, by result: acknowledged or the error code.", "result"),
		ledgerUpdates: newCounterVec(reg, "abacus_ledger_updates_total",
			"Ledger credits, debits, updates and transfers received over HTTP, by result: applied, duplicate (a recognised retry) or the error code.", "result"),
		groupCommit: newHistogram(reg, "abacus_group_commit_updates",
			"Updates acknowledged by one successful shard write (group commit size).", prometheus.ExponentialBuckets(1, 2, 12)),
		shardWrite: newHistogram(reg, "abacus_shard_write_seconds",
			"Latency of shard writes, successful or not.", latency),
		shardWriteErr: newCounter(reg, "abacus_shard_write_errors_total",
			"Shard writes that failed; their updates got an unknown outcome."),
		readShards: newHistogram(reg, "abacus_read_shards",
			"Live shards merged by one counter read; GC keeps this small.", []float64{0, 1, 2, 4, 8, 16, 32, 64, 128, 256}),
		gcRuns: newCounter(reg, "abacus_gc_runs_total",
			"Counter collections attempted (including skipped ones)."),
		gcSkips: newCounter(reg, "abacus_gc_skips_total",
			"Counter collections skipped, for example because a replica was down."),
		gcFolded: newCounter(reg, "abacus_gc_folded_shards_total",
			"Final shards folded into tallies."),
		httpRequests: newCounterVec(reg, "abacus_http_requests_total",
			"HTTP requests by route pattern and status code.", "route", "code"),
		httpSeconds: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "abacus_http_request_seconds", Help: "HTTP request latency by route pattern.", Buckets: latency,
		}, []string{"route"})),
		nsRequests: newCounterVec(reg, "abacus_namespace_requests_total",
			"Requests about one namespace's counters or ledgers, by namespace (the first --metrics-max-namespaces seen; the rest as _other), model, access (read or write) and result (ok, refused: 4xx, failed: 5xx).",
			"namespace", "model", "access", "result"),
		modelSeconds: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "abacus_model_request_seconds", Help: "Latency of requests about one namespace's counters or ledgers, by the namespace's model and access (read or write).", Buckets: latency,
		}, []string{"model", "access"})),
	}
}

// otherNamespaces is the label of every namespace past the limit. New
// names start with a letter or digit, so no namespace made now can
// carry it.
const otherNamespaces = "_other"

// namespaceLabels hands out namespace label values: each of the first max
// namespaces seen keeps its own, every later one shares otherNamespaces,
// so that the series count stays bounded however many namespaces exist.
type namespaceLabels struct {
	mu   sync.RWMutex
	max  int
	seen map[string]struct{}
}

func (l *namespaceLabels) label(ns string) string {
	// Almost every request names a namespace seen before: a shared lock.
	l.mu.RLock()
	_, ok := l.seen[ns]
	full := len(l.seen) >= l.max
	l.mu.RUnlock()
	if ok {
		return ns
	}
	if full {
		return otherNamespaces
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[ns]; ok {
		return ns
	}
	if len(l.seen) >= l.max {
		return otherNamespaces
	}
	if l.seen == nil {
		l.seen = map[string]struct{}{}
	}
	l.seen[ns] = struct{}{}
	return ns
}

// observeNamespace counts a request whose route names one namespace
// ({ns}), once the handler has answered. Only a namespace the client has
// already resolved is counted — never one a request merely named (a 404
// would otherwise take a label) and never at the cost of a store read.
func (s *Server) observeNamespace(r *http.Request, status int, elapsed time.Duration) {
	if !strings.Contains(r.Pattern, "{ns}") {
		return
	}
	ns, ok := s.client.KnownNamespace(r.PathValue("ns"))
	if !ok {
		return
	}
	access := "write"
	if r.Method == http.MethodGet || r.Method == http.MethodHead || strings.HasSuffix(r.Pattern, "/find") {
		access = "read"
	}
	result := "ok"
	switch {
	case status >= 500:
		result = "failed"
	case status >= 400:
		result = "refused"
	}
	model := string(ns.Model)
	s.metrics.nsRequests.WithLabelValues(s.metrics.nsLabels.label(ns.Name), model, access, result).Inc()
	s.metrics.modelSeconds.WithLabelValues(model, access).Observe(elapsed.Seconds())
}

func newCounter(reg prometheus.Registerer, name, help string) prometheus.Counter {
	return register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
}

func newCounterVec(reg prometheus.Registerer, name, help string, labels ...string) *prometheus.CounterVec {
	return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
}

func newHistogram(reg prometheus.Registerer, name, help string, buckets []float64) prometheus.Histogram {
	return register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}))
}

func (m *metrics) hooks() sharded.Hooks {
	return sharded.Hooks{
		Commit: func(n uint64, d time.Duration, err error) {
			m.shardWrite.Observe(d.Seconds())
			if err != nil {
				m.shardWriteErr.Inc()
				return
			}
			m.groupCommit.Observe(float64(n))
		},
		Read: func(shards int) { m.readShards.Observe(float64(shards)) },
		GC: func(r sharded.GCResult) {
			m.gcRuns.Inc()
			if r.Skipped {
				m.gcSkips.Inc()
			}
			m.gcFolded.Add(float64(r.Folded))
		},
	}
}

// registerClient adds the collectors that read live state from the client.
func registerClient(reg prometheus.Registerer, c *abacus.Client) {
	register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "abacus_live_mutators",
		Help: "Mutators (per-counter shard writers) held by this process.",
	}, func() float64 { return float64(c.LiveMutators()) }))
	unix := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return float64(t.UnixNano()) / 1e9
	}
	register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "abacus_gc_last_complete_sweep_timestamp_seconds",
		Help: "When this process last collected every sharded counter without skipping one (Unix time; 0: not since it started).",
	}, func() float64 { return unix(c.Sweeps().GCComplete) }))
	register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "abacus_rollup_last_complete_sweep_timestamp_seconds",
		Help: "When this process last rolled up every events counter without skipping one (Unix time; 0: not since it started).",
	}, func() float64 { return unix(c.Sweeps().RollupComplete) }))
	register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "abacus_purge_last_complete_sweep_timestamp_seconds",
		Help: "When this process last purged, without an error, what deletes and TTL periods left behind in every namespace (Unix time; 0: not since it started).",
	}, func() float64 { return unix(c.Sweeps().PurgeComplete) }))
	for _, f := range []struct {
		name, help string
		get        func() uint64
	}{
		{"abacus_deduplicated_updates_total", "Retried updates recognised by request id and not applied again.", func() uint64 { return c.Stats().Deduplicated.Load() }},
		{"abacus_sharded_unbounded_reads_total", "Reads of a sharded counter's whole partition, folded shards' tombstones included: a process's first read of each counter, and reads whose bounded answer could not be trusted (a replica behind).", func() uint64 { return c.Stats().UnboundedReads.Load() }},
		{"abacus_sharded_stale_shards_total", "Live rows of folded shards that reads left out (a fold's delete not on every replica yet, or a row back after its tombstone was dropped unrepaired).", func() uint64 { return c.Stats().StaleShards.Load() }},
		{"abacus_mutator_births_total", "Mutators born (one per counter per process, renewed before each dies).", func() uint64 { return c.Stats().Births.Load() }},
		{"abacus_events_rollups_total", "Rollups of events counters that ran (skipped ones excluded).", func() uint64 { return c.EventsStats().Rollups.Load() }},
		{"abacus_events_rollup_skips_total", "Rollups of events counters skipped (a replica down, a racing rollup); retried later.", func() uint64 { return c.EventsStats().RollupSkips.Load() }},
		{"abacus_events_rolled_total", "Events folded into rollups.", func() uint64 { return c.EventsStats().EventsRolled.Load() }},
		{"abacus_events_scanned_total", "Events added up by reads (events after the last rollup).", func() uint64 { return c.EventsStats().EventsScanned.Load() }},
		{"abacus_events_too_late_total", "Increments refused as too late to de-duplicate, or as retries their seal did not count.", func() uint64 { return c.EventsStats().TooLate.Load() }},
		{"abacus_events_replayed_total", "Retries of events counted before, recognised from their seal and not counted again.", func() uint64 { return c.EventsStats().Replayed.Load() }},
		{"abacus_events_seals_total", "Seals rollups stored (each closes a range of a counter's events).", func() uint64 { return c.EventsStats().Seals.Load() }},
		{"abacus_events_reads_total", "Reads of events counters from the store.", func() uint64 { return c.EventsStats().Reads.Load() }},
		{"abacus_events_shared_reads_total", "Reads of events counters that shared another caller's store read.", func() uint64 { return c.EventsStats().SharedReads.Load() }},
		{"abacus_events_cached_reads_total", "Bounded-staleness reads of events counters answered from memory.", func() uint64 { return c.EventsStats().CachedReads.Load() }},
	} {
		register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: f.name, Help: f.help}, func() float64 { return float64(f.get()) }))
	}
	register(reg, rollupLagCollector{c.EventsStats()})
	register(reg, collectors.NewGoCollector())
	register(reg, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

var rollupLagDesc = prometheus.NewDesc("abacus_events_rollup_lag_seconds",
	"Per namespace, the largest rollup lag (now minus a counter's rollup epoch) that this process's reads and rollups saw since the previous scrape; absent when none. Hot counters keep it near seal + rollup delay + 1 s.",
	[]string{"namespace"}, nil)

// rollupLagCollector reports the events engine's lag maxima, one period
// per scrape: a gauge of the worst lag seen since, so a short spike is
// not missed between scrapes.
type rollupLagCollector struct{ stats *abacus.EventsStats }

func (rollupLagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- rollupLagDesc }

func (l rollupLagCollector) Collect(ch chan<- prometheus.Metric) {
	for ns, lag := range l.stats.LagSnapshot() {
		ch <- prometheus.MustNewConstMetric(rollupLagDesc, prometheus.GaugeValue, lag.Seconds(), ns)
	}
}

// registerBuildInfo exports abacus_build_info: always 1, with the build in
// its labels, so that dashboards can tell which servers run which release.
func registerBuildInfo(reg prometheus.Registerer, version, commit string) {
	info := register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "abacus_build_info",
		Help: "The build this server runs (always 1): release version, VCS commit and Go version.",
	}, []string{"version", "commit", "go_version"}))
	info.WithLabelValues(version, commit, runtime.Version()).Set(1)
}

// Hooks returns sharded-model hooks that record into reg. Pass them as
// abacus.Config.ShardedHooks when creating the client, and pass the same
// registry as Config.Registry to New; both then share one set of collectors.
// A nil reg records into collectors nobody exports.
func Hooks(reg *prometheus.Registry) sharded.Hooks {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return newMetrics(reg).hooks()
}
