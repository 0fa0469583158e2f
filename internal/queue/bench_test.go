package queue

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
		for _, w := range []struct {
			name  string
			delay time.Duration
			rate  int
		}{
			{"now", 0, 0},
			{"delay=3s", 3 * time.Second, 0},
			{"rate=300/s", 0, 300},
		} {
			b.Run(st.name+"/"+w.name, func(b *testing.B) { endToEnd(b, st.store, w.delay, w.rate) })
		}
	}
}

func endToEnd(b *testing.B, store driver.Queues, delay time.Duration, rate int) {
	ctx := context.Background()
	svc := benchService(b, store, clock.Real{})
	q, err := svc.Create(ctx, QueueConfig{Name: fmt.Sprint("e2e-", time.Now().UnixNano()), Shards: 16, ShardDuration: time.Second})
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
	for i := range 2 {
		c, err := svc.NewConsumer(ctx, ConsumerConfig{
			Queue: q.Name, Name: fmt.Sprint("bench-", i), Concurrency: 32, LeaseTTL: 10 * time.Second,
			PollInterval: 100 * time.Millisecond, CatchUpInterval: 500 * time.Millisecond, BatchSize: 100,
			Handler: func(ctx context.Context, d *Delivery) error {
				late := time.Since(d.Due())
				mu.Lock()
				delays = append(delays, late)
				mu.Unlock()
				if handled.Add(1) == int64(n) {
					close(done)
				}
				return nil
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		consumers = append(consumers, c)
	}
	b.ResetTimer()
	start := time.Now()
	for _, c := range consumers {
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
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
				}
				if _, err := svc.PutBatch(ctx, q.Name, msgs); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	putDone := time.Since(start)
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d messages handled after 5 minutes", handled.Load(), n)
	}
	elapsed := time.Since(start)
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
	b.ReportMetric(0, "ns/op")
}
