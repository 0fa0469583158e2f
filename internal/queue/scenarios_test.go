package queue

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/datadriven"
)

// TestScenarios runs the round, lease, floor and wake scenarios of
// testdata/scenarios on the embedded store with a manual clock that starts
// at a window boundary (10:00:00). Commands:
//
//	create shards=<n> window=<duration>    a queue named q
//	put body=<text> [delay=<d>] [skew=<d>] [remote]
//	                                       a message, from a producer whose clock is off by skew
//	                                       (or, with remote, from another process: no hints)
//	advance by=<duration>                  move the clock
//	shards                                 the consumers', producers' and sweep's shards now
//	round consumer=<name>                  the shards the consumer's next round visits
//	receive consumer=<name> [max=<n>] [ack] [failafter=<d>]
//	                                       what a Receive hands out, and the lease after it;
//	                                       ack or fail (visible again after d) each delivery
//	wake consumer=<name>                   the consumer's wake times (after its hints)
//	shard n=<shard>                        the stored lease holder and floor of a shard
//
// A consumer is made at its first mention, with catchup=<d> as its
// CatchUpInterval if given.
//
// Times are printed as the clock's time of day (with milliseconds when
// there are any); a zero floor as "none".
func TestScenarios(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var (
		store     driver.Queues
		clk       *clock.Manual
		svc       *Service
		consumers map[string]*Consumer
	)
	datadriven.RunTest(t, "testdata/scenarios", func(t *testing.T, td *datadriven.TestData) string {
		at := func(tm time.Time) string {
			if tm.IsZero() || tm.Equal(time.UnixMilli(0)) {
				return "none"
			}
			return tm.UTC().Format("15:04:05.999")
		}
		duration := func(key string) time.Duration {
			var s string
			if !td.MaybeScanArgs(t, key, &s) {
				return 0
			}
			d, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("%s: %s: %v", td.Pos, key, err)
			}
			return d
		}
		consumer := func() *Consumer {
			var name string
			td.ScanArgs(t, "consumer", &name)
			if c, ok := consumers[name]; ok {
				return c
			}
			c, err := svc.NewConsumer(ctx, ConsumerConfig{Queue: "q", Name: name, LeaseTTL: time.Minute, CatchUpInterval: duration("catchup")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Stop(context.Background()) })
			consumers[name] = c
			return c
		}
		var out strings.Builder
		switch td.Cmd {
		case "create":
			store = embeddedStore(t)
			clk = clock.NewManual(start)
			consumers = map[string]*Consumer{}
			var err error
			if svc, err = New(Config{Store: store, Clock: clk, Logger: quiet}); err != nil {
				t.Fatal(err)
			}
			var n int
			td.ScanArgs(t, "shards", &n)
			q, err := svc.Create(ctx, QueueConfig{Name: "q", Shards: n, ShardDuration: duration("window")})
			if err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			fmt.Fprintf(&out, "q: %d shards of %v\n", q.Shards, q.ShardDuration)
		case "put":
			var body string
			td.ScanArgs(t, "body", &body)
			p := svc
			if skew := duration("skew"); skew != 0 || td.HasArg("remote") {
				var err error
				if p, err = New(Config{Store: store, Clock: clock.Offset{Base: clk, By: skew}, Logger: quiet}); err != nil {
					t.Fatal(err)
				}
			}
			id, err := p.Put(ctx, "q", Message{Body: []byte(body), Delay: duration("delay")})
			if err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			// Where it landed, as stored.
			q, err := svc.Queue(ctx, "q")
			if err != nil {
				t.Fatal(err)
			}
			for sh := range q.Shards {
				page, err := store.ReadMessages(ctx, &driver.ReadMessagesParams{
					Queue: "q", Shard: sh, From: time.UnixMilli(0), To: start.Add(1000 * time.Hour), Limit: 1000,
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range page.Messages {
					if m.ID == id {
						fmt.Fprintf(&out, "%s: shard %d, due %s\n", body, sh, at(m.Due))
					}
				}
			}
		case "advance":
			clk.Advance(duration("by"))
			fmt.Fprintf(&out, "now %s\n", at(clk.Now()))
		case "shards":
			q, err := svc.Queue(ctx, "q")
			if err != nil {
				t.Fatal(err)
			}
			m, now := q.Math(), clk.Now()
			fmt.Fprintf(&out, "consumers %d, producers %d, sweep %v\n", m.Consumer(now), m.Producer(now), m.Oldest(now))
		case "round":
			c := consumer()
			c.mu.Lock()
			c.newRound(clk.Now())
			fmt.Fprintf(&out, "round %v\n", c.ln.round)
			c.mu.Unlock()
		case "receive":
			c := consumer()
			max := 10
			td.MaybeScanArgs(t, "max", &max)
			ds, err := c.Receive(ctx, max)
			if err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			for _, d := range ds {
				fmt.Fprintf(&out, "%s: shard %d, attempt %d\n", d.Body(), d.Shard(), d.Attempt())
				if td.HasArg("ack") {
					if err := d.Ack(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if after := duration("failafter"); after > 0 {
					if _, err := svc.FailAfter(ctx, "q", d.Receipt(), "failed on purpose", after); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(ds) == 0 {
				out.WriteString("nothing\n")
			}
			c.mu.Lock()
			if c.ln.lease != nil {
				fmt.Fprintf(&out, "lease: shard %d\n", c.ln.lease.shard)
			} else {
				out.WriteString("lease: none\n")
			}
			c.mu.Unlock()
		case "wake":
			c := consumer()
			c.mu.Lock()
			c.hints.drainInto(c.wake)
			shards := slices.Sorted(maps.Keys(c.wake))
			for _, s := range shards {
				fmt.Fprintf(&out, "shard %d at %s\n", s, at(c.wake[s]))
			}
			c.mu.Unlock()
			if len(shards) == 0 {
				out.WriteString("none\n")
			}
		case "shard":
			var n int
			td.ScanArgs(t, "n", &n)
			st, err := store.ReadQueueShard(ctx, &driver.QueueShardParams{Queue: "q", Shard: n})
			if err != nil {
				t.Fatal(err)
			}
			holder := st.Holder
			if holder == "" {
				holder = "none"
			}
			fmt.Fprintf(&out, "holder %s, floor %s\n", holder, at(st.Floor))
		default:
			t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
		}
		return out.String()
	})
}
