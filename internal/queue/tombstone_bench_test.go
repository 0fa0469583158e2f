package queue

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
)

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
