package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/client"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/cassandra"
)

// CounterNames returns n distinct counter names starting with prefix.
// Scenarios pick from a precomputed slice so that building a name is not
// part of the measured call.
func CounterNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return names
}

// Picker chooses the counter of each call: uniformly at random over its
// names, or with a hot counter that takes a fixed share of the calls. Each
// worker has its own generator (no shared state on the hot path), padded to
// its own cache line because neighbouring workers write theirs
// concurrently.
type Picker struct {
	names []string
	hot   float64
	rngs  []paddedRand
}

type paddedRand struct {
	r *rand.Rand
	_ [56]byte
}

// NewPicker returns a picker over names for workers callers. hotFraction
// is the share of calls that go to names[0], the hot counter; the other
// calls are spread uniformly over the other names. 0 means no hot counter:
// every call is uniform over all names, so names[0] gets 1/len(names) like
// any other. hotFraction must be in [0, 1]; with one name it plays no part.
func NewPicker(names []string, workers int, hotFraction float64) (*Picker, error) {
	if len(names) == 0 {
		return nil, errors.New("bench: no counter names")
	}
	if workers <= 0 {
		return nil, fmt.Errorf("bench: %d workers", workers)
	}
	if !(hotFraction >= 0 && hotFraction <= 1) { // also refuses NaN
		return nil, fmt.Errorf("bench: hot fraction %v is not in [0, 1]", hotFraction)
	}
	p := &Picker{names: names, hot: hotFraction, rngs: make([]paddedRand, workers)}
	for i := range p.rngs {
		// Fixed seeds: runs choose the same sequence of counters, which
		// makes repeated runs comparable. Workers differ by their seed.
		p.rngs[i].r = rand.New(rand.NewPCG(uint64(i)+1, 0x9e3779b97f4a7c15))
	}
	return p, nil
}

// Names returns every name the picker chooses from, the hot one first.
func (p *Picker) Names() []string { return p.names }

// Pick returns the counter of worker's next call. Only worker may call it
// with that index (its generator is not locked).
func (p *Picker) Pick(worker int) string {
	n := len(p.names)
	if n == 1 {
		return p.names[0]
	}
	r := p.rngs[worker].r
	if p.hot > 0 {
		if r.Float64() < p.hot {
			return p.names[0]
		}
		return p.names[1+r.IntN(n-1)]
	}
	return p.names[r.IntN(n)]
}

// ShardedIncrements returns an op that adds 1 through the library
// (abacus.Client.Apply) to a counter of namespace chosen by p. It sends no
// request id: the library generates one where the model needs it (events),
// and the HTTP scenario exercises the server's. Every counter model but
// the ledger takes increments this way.
func ShardedIncrements(c *abacus.Client, namespace string, p *Picker) Op {
	return func(ctx context.Context, worker int) error {
		return c.Apply(ctx, abacus.Update{Namespace: namespace, Counter: p.Pick(worker), Delta: 1})
	}
}

// HTTPIncrements returns an op that adds 1 through the HTTP API with the
// Go client, to a counter of namespace chosen by p. The client assigns
// every update a request id, as any real caller would.
func HTTPIncrements(c *client.Client, namespace string, p *Picker) Op {
	return func(ctx context.Context, worker int) error {
		_, err := c.Add(ctx, namespace, p.Pick(worker), 1)
		return err
	}
}

// ShardedReads returns an op that reads one counter through the library.
func ShardedReads(c *abacus.Client, namespace, counter string) Op {
	return func(ctx context.Context, _ int) error {
		_, err := c.Get(ctx, namespace, counter)
		return err
	}
}

// PickedReads returns an op that reads, through the library
// (Client.Get), a counter of namespace chosen by p: the read side of a
// mixed workload, on the counters its writes go to.
func PickedReads(c *abacus.Client, namespace string, p *Picker) Op {
	return func(ctx context.Context, worker int) error {
		_, err := c.Get(ctx, namespace, p.Pick(worker))
		return err
	}
}

// NativeTable is the table of Cassandra counters that the native baseline
// uses, created in the benchmark keyspace.
const NativeTable = "native_bench"

// Native drives Cassandra's own counters (the “Counters” design notes): the baseline the
// sharded model is measured against. Use the session of the Cassandra
// driver the sharded scenarios run on, so both go through the same
// connection pool, host selection and timeouts.
type Native struct {
	Session  *gocql.Session
	Keyspace string
	// Consistency of both increments and reads; the benchmark uses the
	// level of the sharded writes.
	Consistency gocql.Consistency

	update, read string
	d            *cassandra.Driver
}

// NewNative returns a Native in the keyspace of d, on d's session.
func NewNative(d *cassandra.Driver, cl gocql.Consistency) *Native {
	ks := d.Keyspace()
	return &Native{
		Session: d.Session(), Keyspace: ks, Consistency: cl, d: d,
		update: "UPDATE " + ks + "." + NativeTable + " SET c = c + ? WHERE k = ?",
		read:   "SELECT c FROM " + ks + "." + NativeTable + " WHERE k = ?",
	}
}

// CreateTable creates the counter table if it is missing and waits for the
// cluster to agree on the schema.
func (n *Native) CreateTable(ctx context.Context) error {
	return createTable(ctx, n.d, NativeTable, "(k text PRIMARY KEY, c counter)")
}

// createTable creates table in d's keyspace with the column definitions
// columns if it is missing, and waits for the cluster to agree on the
// schema so that the first writes do not race the new table.
func createTable(ctx context.Context, d *cassandra.Driver, table, columns string) error {
	stmt := "CREATE TABLE IF NOT EXISTS " + d.Keyspace() + "." + table + " " + columns
	if err := d.ChangeSchema(ctx, stmt); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// Add adds delta to the native counter k. Counter updates are not
// idempotent, so gocql never retries them.
func (n *Native) Add(ctx context.Context, k string, delta int64) error {
	return n.Session.Query(n.update, delta, k).Consistency(n.Consistency).ExecContext(ctx)
}

// Get reads the native counter k; a counter never written reads as 0.
func (n *Native) Get(ctx context.Context, k string) (int64, error) {
	var v int64
	err := n.Session.Query(n.read, k).Consistency(n.Consistency).ScanContext(ctx, &v)
	if errors.Is(err, gocql.ErrNotFound) {
		return 0, nil
	}
	return v, err
}

// NativeIncrements returns an op that adds 1 to a native counter chosen
// by p.
func NativeIncrements(n *Native, p *Picker) Op {
	return func(ctx context.Context, worker int) error {
		return n.Add(ctx, p.Pick(worker), 1)
	}
}

// NativeReads returns an op that reads the native counter k.
func NativeReads(n *Native, k string) Op {
	return func(ctx context.Context, _ int) error {
		_, err := n.Get(ctx, k)
		return err
	}
}

// NativePickedReads returns an op that reads a native counter chosen by p.
func NativePickedReads(n *Native, p *Picker) Op {
	return func(ctx context.Context, worker int) error {
		_, err := n.Get(ctx, p.Pick(worker))
		return err
	}
}

// GocqlConsistency converts a driver level to gocql's. driver.Default has
// no gocql equivalent and is refused.
func GocqlConsistency(c driver.Consistency) (gocql.Consistency, error) {
	if c == driver.Default {
		return 0, errors.New("bench: consistency DEFAULT has no CQL equivalent; name a level")
	}
	return gocql.ParseConsistencyWrapper(strings.ToUpper(c.String()))
}
