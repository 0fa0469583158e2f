package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/abacusdb/abacus/internal/cassandratest"
	"github.com/cockroachdb/pebble/v2/vfs"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// start is where every manual clock begins: a window boundary.
var start = time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)

// cass is one Cassandra driver (one keyspace) shared by every test of the
// package that runs against Cassandra: creating a keyspace per test would
// cost seconds of schema agreement each. Tests use distinct queue names.
var cass struct {
	once sync.Once
	d    *cassandra.Driver
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cass.d != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := cass.d.Session().Query("DROP KEYSPACE IF EXISTS " + cass.d.Keyspace()).ExecContext(ctx)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "queue tests: dropping keyspace %s: %v\n", cass.d.Keyspace(), err)
		}
		cass.d.Close()
	}
	os.Exit(code)
}

func cassandraStore(t *testing.T) driver.Queues {
	t.Helper()
	hosts := cassandratest.Hosts(t) // skips without ABACUS_TEST_CASSANDRA
	cass.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cass.d, cass.err = cassandra.Open(ctx, cassandra.Config{
			Hosts:       hosts,
			Keyspace:    cassandratest.KeyspaceName("queue_tests"),
			Replication: cassandra.Replication{ReplicationFactor: min(len(hosts), 3)},
			Timeout:     15 * time.Second,
			Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		})
	})
	if cass.err != nil {
		t.Fatalf("opening Cassandra at %v: %v", hosts, cass.err)
	}
	return cass.d
}

func embeddedStore(t *testing.T) driver.Queues {
	t.Helper()
	d, err := embedded.Open(context.Background(), embedded.Config{FS: vfs.NewMem(), Logger: quiet, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// env is one test's world: a store, a manual clock and a service on both.
type env struct {
	driver string
	store  driver.Queues
	clock  *clock.Manual
	svc    *Service
}

// onBothDrivers runs f against the embedded store and, when
// ABACUS_TEST_CASSANDRA is set, against Cassandra, in parallel.
func onBothDrivers(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	for _, name := range []string{"embedded", "cassandra"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var store driver.Queues
			if name == "embedded" {
				store = embeddedStore(t)
			} else {
				store = cassandraStore(t)
			}
			f(t, newEnv(t, name, store))
		})
	}
}

// newEnv is an env on store (named driverName) with a manual clock at
// start and a service on that clock.
func newEnv(t *testing.T, driverName string, store driver.Queues) *env {
	t.Helper()
	e := &env{driver: driverName, store: store, clock: clock.NewManual(start)}
	e.svc = e.service(t, e.clock)
	return e
}

// service returns another service on e's store with its own clock (a
// process whose clock differs).
func (e *env) service(t *testing.T, c clock.Clock) *Service {
	t.Helper()
	s, err := New(Config{Store: e.store, Clock: c, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// queueName is unique per test and run: tests on Cassandra share a keyspace.
func queueName(t *testing.T) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strings.ReplaceAll(t.Name(), "/", ".") + "-" + hex.EncodeToString(b[:])
}

func (e *env) create(t *testing.T, c QueueConfig) *Queue {
	t.Helper()
	if c.Name == "" {
		c.Name = queueName(t)
	}
	q, err := e.svc.Create(ctxT(t), c)
	if err != nil {
		t.Fatalf("Create(%+v): %v", c, err)
	}
	return q
}

func (e *env) put(t *testing.T, svc *Service, q string, m Message) ID {
	t.Helper()
	id, err := svc.Put(ctxT(t), q, m)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return id
}

func (e *env) consumer(t *testing.T, svc *Service, cfg ConsumerConfig) *Consumer {
	t.Helper()
	if cfg.LeaseTTL == 0 {
		// Long enough that no test's lease lapses between its store
		// operations on a loaded machine (only Receive renews one);
		// tests that need a lease to lapse set a short one themselves.
		cfg.LeaseTTL = time.Minute
	}
	c, err := svc.NewConsumer(ctxT(t), cfg)
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

func receive(t *testing.T, c *Consumer, max int) []*Delivery {
	t.Helper()
	ds, err := c.Receive(ctxT(t), max)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return ds
}

// drain receives and acknowledges until a Receive comes back empty and
// returns the ids it got.
func drain(t *testing.T, c *Consumer) []ID {
	t.Helper()
	var got []ID
	for {
		ds := receive(t, c, 50)
		if len(ds) == 0 {
			return got
		}
		for _, d := range ds {
			if err := d.Ack(ctxT(t)); err != nil {
				t.Fatalf("Ack: %v", err)
			}
			got = append(got, d.ID())
		}
	}
}

func (e *env) observe(t *testing.T, q string) *Observation {
	t.Helper()
	o, err := e.svc.Observe(ctxT(t), q)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	return o
}

// delivered creates a queue of 4 shards with visibility timeout vis, puts
// one message, lets it fall due and receives it: the start of every test
// about a delivery in hand.
func (e *env) delivered(t *testing.T, vis time.Duration) (*Queue, *Consumer, *Delivery) {
	t.Helper()
	q := e.create(t, QueueConfig{Shards: 4, VisibilityTimeout: vis})
	id := e.put(t, e.svc, q.Name, Message{Body: []byte("job")})
	e.clock.Advance(2 * time.Minute)
	c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
	ds := receive(t, c, 1)
	if len(ds) != 1 || ds[0].ID() != id {
		t.Fatalf("received %v, want the one message %s", deliveryIDs(ds), id)
	}
	return q, c, ds[0]
}
