package queue

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/abacusdb/abacus/internal/cassandratest"
)

// Benchmarks of the queue on the embedded store (on disk, fsync on) and,
// when ABACUS_BENCH_CASSANDRA names a node (or ABACUS_TEST_CASSANDRA does),
// on Cassandra. Results and the commands that produced them are in
// docs/benchmarks-queue.md. The end-to-end benchmark reports messages per
// second and the due-to-delivered delay; run it with a fixed count, e.g.
//
//	go test ./queue -run '^$' -bench EndToEnd -benchtime 20000x

// benchStore is one store to benchmark on.
type benchStore struct {
	name  string
	store driver.Queues
	cass  *cassandra.Driver // the same store, when it is Cassandra
}

func benchHosts() []string {
	v := os.Getenv("ABACUS_BENCH_CASSANDRA")
	if v == "" {
		v = os.Getenv(cassandratest.EnvHosts)
	}
	var hosts []string
	for _, h := range strings.Split(v, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

func openBenchCassandra(b *testing.B, grace time.Duration) *cassandra.Driver {
	b.Helper()
	hosts := benchHosts()
	ks := cassandratest.KeyspaceName(b.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := cassandra.Open(ctx, cassandra.Config{
		Hosts: hosts, Keyspace: ks, QueueGCGrace: grace, Timeout: 20 * time.Second, NumConns: 4,
		Replication: cassandra.Replication{ReplicationFactor: 1},
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		b.Fatalf("opening Cassandra at %v: %v", hosts, err)
	}
	b.Cleanup(func() {
		_ = d.Session().Query("DROP KEYSPACE IF EXISTS " + ks).Exec()
		d.Close()
	})
	return d
}

func benchStores(b *testing.B) []benchStore {
	b.Helper()
	d, err := embedded.Open(context.Background(), embedded.Config{Dir: b.TempDir(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close() })
	out := []benchStore{{name: "embedded", store: d}}
	if len(benchHosts()) > 0 {
		c := openBenchCassandra(b, 0)
		out = append(out, benchStore{name: "cassandra", store: c, cass: c})
	}
	return out
}

func benchService(b *testing.B, store driver.Queues, c clock.Clock) *Service {
	b.Helper()
	s, err := New(Config{Store: store, Clock: c, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkPut measures puts of one message from 16 goroutines per CPU,
// and of batches of 100 from one goroutine per CPU (more concurrent
// batches only make a small Cassandra node time out).
func BenchmarkPut(b *testing.B) {
	for _, st := range benchStores(b) {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/batch=%d", st.name, batch), func(b *testing.B) {
				svc := benchService(b, st.store, clock.Real{})
				q, err := svc.Create(context.Background(), QueueConfig{Name: fmt.Sprint("put-", batch, "-", time.Now().UnixNano())})
				if err != nil {
					b.Fatal(err)
				}
				msgs := make([]Message, batch)
				for i := range msgs {
					msgs[i] = Message{Body: []byte("a 64-byte message body ......................................")}
				}
				b.SetParallelism(max(16/batch, 1))
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := svc.PutBatch(context.Background(), q.Name, msgs); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "msgs/s")
			})
		}
	}
}

// BenchmarkEndToEnd puts b.N messages from 4 producers (batches of 50)
// while 2 consumers with 32 handlers each take and acknowledge them. The
// queue has 16 shards of 1s; consumers poll every 100ms and sweep every
// 500ms. It reports messages per second from the first put to the last
// acknowledgement, and the delay from each message's due time to its
// delivery (p50, p99).
// "now" messages are due at once and wait for their shard window to pass;
// "delay=3s" messages are due when their shard is already readable.
//
// "rate=300/s" puts at a steady 300 messages per second, below what either
// store consumes, so its delays show the design's latency rather than a
// backlog.
func BenchmarkEndToEnd(b *testing.B) {
	for _, st := range benchStores(b) {
		for _, w := range []e2eWorkload{
			{name: "now"},
			{name: "delay=3s", delay: 3 * time.Second},
			{name: "rate=300/s", rate: 300},
			// Default queue and consumer settings (16 shards of a minute,
			// 500ms polls, 10s sweeps), producers in this process (their
			// puts ring the consumers) or in another (no hints: polls).
			{name: "defaults/local/rate=100/s", rate: 100, defaults: true},
			{name: "defaults/remote/rate=100/s", rate: 100, defaults: true, remote: true},
			// A burst already stored, drained by one consumer or by eight
			// (issue 16, item 2: eight should drain it five times as fast).
			{name: "burst/consumers=1", preload: true, consumers: 1},
			{name: "burst/consumers=8", preload: true, consumers: 8},
			// The same burst in a queue of 32 shards whose windows spread
			// over 8 (QueueConfig.Spread).
			{name: "burst/spread=8/consumers=1", preload: true, consumers: 1, spread: 8},
			{name: "burst/spread=8/consumers=8", preload: true, consumers: 8, spread: 8},
			// Priority levels (QueueConfig.Priorities): a queue of four
			// levels whose messages are all at level 0 (what the empty
			// lanes cost), and one whose messages cycle through the levels.
			{name: "rate=300/s/levels=4/all-low", rate: 300, levels: 4},
			{name: "rate=300/s/levels=4/mixed", rate: 300, levels: 4, mixed: true},
			{name: "burst/levels=4/all-low/consumers=1", preload: true, consumers: 1, levels: 4},
			{name: "burst/levels=4/mixed/consumers=1", preload: true, consumers: 1, levels: 4, mixed: true},
		} {
			b.Run(st.name+"/"+w.name, func(b *testing.B) { endToEnd(b, st.store, w) })
		}
	}
}

type e2eWorkload struct {
	name     string
	delay    time.Duration // of every message
	rate     int           // messages put per second; 0: as fast as they go
	defaults bool          // default queue and consumer settings
	remote   bool          // producers use a Service of their own
	// preload puts every message before the consumers start, and times
	// only the drain; consumers is how many there are (default 2).
	preload   bool
	consumers int
	spread    int // QueueConfig.Spread, with 4·spread shards (at least 16)
	// levels is QueueConfig.Priorities; mixed puts message i at level
	// i mod levels, else every message is at level 0.
	levels int
	mixed  bool
}

func endToEnd(b *testing.B, store driver.Queues, w e2eWorkload) {
	ctx := context.Background()
	delay, rate := w.delay, w.rate
	svc := benchService(b, store, clock.Real{})
	producer := svc
	if w.remote {
		producer = benchService(b, store, clock.Real{})
	}
	qc := QueueConfig{Name: fmt.Sprint("e2e-", time.Now().UnixNano()), Shards: max(16, 4*w.spread), Spread: w.spread, Priorities: w.levels, ShardDuration: time.Second}
	if w.defaults {
		qc = QueueConfig{Name: qc.Name}
	}
	q, err := svc.Create(ctx, qc)
	if err != nil {
		b.Fatal(err)
	}
	n := b.N
	var (
		mu      sync.Mutex
		delays  = make([]time.Duration, 0, n)
		handled atomic.Int64
		done    = make(chan struct{})
	)
	var consumers []*Consumer
	for i := range cmp.Or(w.consumers, 2) {
		cc := ConsumerConfig{
			Queue: q.Name, Name: fmt.Sprint("bench-", i), Concurrency: 32, LeaseTTL: 10 * time.Second,
			PollInterval: 100 * time.Millisecond, CatchUpInterval: 500 * time.Millisecond, BatchSize: 100,
		}
		if w.defaults {
			cc = ConsumerConfig{Queue: q.Name, Name: cc.Name, Concurrency: cc.Concurrency}
		}
		cc.Handler = func(ctx context.Context, d *Delivery) error {
			late := time.Since(d.Due())
			mu.Lock()
			delays = append(delays, late)
			mu.Unlock()
			if handled.Add(1) == int64(n) {
				close(done)
			}
			return nil
		}
		c, err := svc.NewConsumer(ctx, cc)
		if err != nil {
			b.Fatal(err)
		}
		consumers = append(consumers, c)
	}
	b.ResetTimer()
	start := time.Now()
	cpuStart := processorTime()
	startConsumers := func() {
		for _, c := range consumers {
			if err := c.Start(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if !w.preload {
		startConsumers()
	}
	var wg sync.WaitGroup
	producers, batch := 4, 50
	if rate > 0 {
		producers, batch = 1, max(rate/20, 1) // a batch every 50ms
	}
	for p := range producers {
		wg.Go(func() {
			for i := p * batch; i < n; i += producers * batch {
				if rate > 0 {
					if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
						time.Sleep(d)
					}
				}
				msgs := make([]Message, min(batch, n-i))
				for j := range msgs {
					msgs[j] = Message{Body: []byte("payload"), Delay: delay}
					if w.mixed {
						msgs[j].Priority = (i + j) % w.levels
					}
				}
				if _, err := producer.PutBatch(ctx, q.Name, msgs); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	putDone := time.Since(start)
	if w.preload {
		start, cpuStart = time.Now(), processorTime() // the drain alone
		startConsumers()
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d messages handled after 5 minutes", handled.Load(), n)
	}
	elapsed := time.Since(start)
	cpu := processorTime() - cpuStart
	b.StopTimer()
	for _, c := range consumers {
		_ = c.Stop(ctx)
	}
	slices.Sort(delays)
	pct := func(p float64) float64 { return float64(delays[int(p*float64(len(delays)-1))].Milliseconds()) }
	b.ReportMetric(float64(n)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(n)/putDone.Seconds(), "put-msgs/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/msg")
	b.ReportMetric(0, "ns/op")
}

// processorTime is the processor time this process has used, user and
// system (zero where getrusage is missing): what a run costs the machine,
// which on two shared cores says more than the wall clock.
func processorTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTombstones measures the original design's known weakness: a shard
// whose messages were all consumed is full of tombstones, and a read that
// starts at the shard's beginning goes through all of them. It puts 100,000
// messages into one shard, consumes them with the engine, and times two
// reads of that shard as the tombstones pile up:
//
//   - "from start": what the design's consumer does (due >= 0, LIMIT 100);
//   - "from floor": what this engine does (due >= the shard's floor).
//
// On Cassandra it then lets gc_grace_seconds pass, flushes and compacts the
// table (nodetool, via ABACUS_NODETOOL) and reads again, once on a table
// with gc_grace_seconds = 10 and once with the default (3h).
//
// It takes minutes and needs a node it may flush and compact, so it runs
// only with ABACUS_BENCH_TOMBSTONES=1:
//
//	ABACUS_BENCH_TOMBSTONES=1 ABACUS_BENCH_CASSANDRA=127.0.0.9 \
//	ABACUS_NODETOOL=/path/to/nodetool go test ./queue -run '^$' \
//	-bench Tombstones -benchtime 1x -timeout 30m
func BenchmarkTombstones(b *testing.B) {
	if os.Getenv("ABACUS_BENCH_TOMBSTONES") != "1" {
		b.Skip("set ABACUS_BENCH_TOMBSTONES=1 (see the comment) to run the tombstone benchmark")
	}
	const total = 100_000
	b.Run("embedded", func(b *testing.B) {
		stores := benchStores(b)
		tombstones(b, stores[0].store, total, nil)
	})
	if len(benchHosts()) == 0 {
		return
	}
	for _, grace := range []time.Duration{10 * time.Second, 0} {
		name := "cassandra/gc_grace=default"
		if grace > 0 {
			name = fmt.Sprintf("cassandra/gc_grace=%ds", int(grace.Seconds()))
		}
		b.Run(name, func(b *testing.B) {
			d := openBenchCassandra(b, grace)
			compact := func() error {
				nt := os.Getenv("ABACUS_NODETOOL")
				if nt == "" {
					return fmt.Errorf("ABACUS_NODETOOL is not set")
				}
				for _, args := range [][]string{{"flush", d.Keyspace(), "queue_messages"}, {"compact", d.Keyspace(), "queue_messages"}} {
					if out, err := exec.Command(nt, args...).CombinedOutput(); err != nil {
						return fmt.Errorf("nodetool %v: %v: %s", args, err, out)
					}
				}
				return nil
			}
			wait := grace
			if wait == 0 {
				wait = 10 * time.Second // the same wait, but a 3h grace has not passed
			}
			tombstones(b, d, total, func() (string, error) {
				time.Sleep(wait + 2*time.Second)
				return fmt.Sprintf("after %v, flush and compact", wait+2*time.Second), compact()
			})
		})
	}
}

// tombstones runs the scenario on one store; after, if not nil, is run once
// everything is consumed, and the reads are timed again.
func tombstones(b *testing.B, store driver.Queues, total int, after func() (string, error)) {
	ctx := context.Background()
	clk := clock.NewManual(time.Now().UTC().Truncate(time.Hour))
	svc := benchService(b, store, clk)
	q, err := svc.Create(ctx, QueueConfig{Name: fmt.Sprint("tomb-", time.Now().UnixNano()), Shards: 4, ShardDuration: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	shard := q.Math().Producer(clk.Now())
	putStart := time.Now()
	for i := 0; i < total; i += 100 {
		msgs := make([]Message, 100)
		for j := range msgs {
			msgs[j] = Message{Body: []byte("tombstone to be")}
		}
		if _, err := svc.PutBatch(ctx, q.Name, msgs); err != nil {
			b.Fatal(err)
		}
		// Spread the puts over most of the shard's hour, as a steady
		// producer would (100 messages every 3.5s).
		clk.Advance(3500 * time.Millisecond)
	}
	putTook := time.Since(putStart)
	clk.Advance(2 * time.Hour) // the shard is no longer the producers'

	readFrom := func(from time.Time) (time.Duration, int, error) {
		start := time.Now()
		page, err := store.ReadMessages(ctx, &driver.ReadMessagesParams{
			Queue: q.Name, Shard: shard, From: from, To: clk.Now(), Limit: 100, WithBody: true,
		})
		if err != nil {
			return time.Since(start), 0, err
		}
		return time.Since(start), len(page.Messages), nil
	}
	floorRead := func() (time.Duration, int, error) {
		start := time.Now()
		st, err := store.ReadQueueShard(ctx, &driver.QueueShardParams{Queue: q.Name, Shard: shard})
		if err != nil {
			return 0, 0, err
		}
		from := time.UnixMilli(0)
		if !st.Floor.IsZero() {
			from = st.Floor
		}
		_, n, err := readFrom(from)
		return time.Since(start), n, err
	}
	report := func(stage string) {
		// The median of 5 reads of each kind.
		med := func(read func() (time.Duration, int, error)) string {
			var ds []time.Duration
			var last error
			n := 0
			for range 5 {
				d, got, err := read()
				if err != nil {
					last = err
					continue
				}
				ds, n = append(ds, d), got
			}
			if len(ds) == 0 {
				msg := last.Error()
				if i := strings.LastIndex(msg, ": "); i >= 0 && len(msg) > 160 {
					msg = msg[i+2:]
				}
				return "fails: " + msg
			}
			slices.Sort(ds)
			return fmt.Sprintf("%v (%d rows)", ds[len(ds)/2].Round(10*time.Microsecond), n)
		}
		b.Logf("%-42s from start: %-40s from floor: %s", stage, med(func() (time.Duration, int, error) { return readFrom(time.UnixMilli(0)) }), med(floorRead))
	}

	b.Logf("put %d messages into shard %d in %v (%.0f msgs/s)", total, shard, putTook.Round(time.Millisecond), float64(total)/putTook.Seconds())
	report("0 consumed")
	c, err := svc.NewConsumer(ctx, ConsumerConfig{Queue: q.Name, LeaseTTL: 30 * time.Second, BatchSize: 100})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop(ctx)
	consumed := 0
	consumeStart := time.Now()
	next := total / 4
	for consumed < total {
		ds, err := c.Receive(ctx, 100)
		if err != nil {
			b.Fatal(err)
		}
		if len(ds) == 0 {
			b.Fatalf("nothing to receive after %d of %d", consumed, total)
		}
		var wg sync.WaitGroup
		for _, d := range ds {
			wg.Go(func() {
				if err := d.Ack(ctx); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		consumed += len(ds)
		if consumed >= next {
			b.Logf("consumed %d in %v", consumed, time.Since(consumeStart).Round(time.Millisecond))
			report(fmt.Sprintf("%d consumed", consumed))
			next += total / 4
		}
	}
	b.Logf("consumed %d messages in %v (%.0f msgs/s)", total, time.Since(consumeStart).Round(time.Millisecond),
		float64(total)/time.Since(consumeStart).Seconds())
	// The consumer's next poll finds the shard empty and moves its floor
	// past everything.
	clk.Advance(time.Second)
	if ds, err := c.Receive(ctx, 100); err != nil || len(ds) != 0 {
		b.Fatalf("after consuming everything: %d deliveries, %v", len(ds), err)
	}
	report("all consumed, one more poll")
	if after != nil {
		stage, err := after()
		if err != nil {
			b.Fatal(err)
		}
		report(stage)
	}
}
