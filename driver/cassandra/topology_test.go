package cassandra_test

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/internal/cassandratest"
)

// Open checks the config against the data centers the cluster reports
// before it makes any schema. On the one-data-center test clusters the
// data center is the snitch's default name; the two-data-center cluster
// of the partition suite runs the same code with --local-dc.
func TestOpenChecksDataCenters(t *testing.T) {
	t.Parallel()
	dcs := sharedDriver(t).DataCenters()
	var names []string
	nodes := 0
	for dc, n := range dcs {
		names = append(names, dc)
		nodes += n
	}
	sort.Strings(names)
	if len(names) == 0 || nodes < len(cassandratest.Hosts(t)) {
		t.Fatalf("DataCenters() = %v for the hosts %v", dcs, cassandratest.Hosts(t))
	}
	local := names[0]

	// From the schema tables, not gocql's metadata cache, which may not
	// know yet of a keyspace just made.
	table := "system.schema_keyspaces"
	if sharedDriver(t).Capabilities().Version.AtLeast(3, 0) {
		table = "system_schema.keyspaces"
	}
	notCreated := func(t *testing.T, ks string) {
		t.Helper()
		var name string
		err := cassandratest.Session(t).Query("SELECT keyspace_name FROM "+table+" WHERE keyspace_name = ?", ks).
			Consistency(gocql.All).ScanContext(ctxT(t), &name)
		if !errors.Is(err, gocql.ErrNotFound) {
			t.Errorf("keyspace %s after an Open that failed: %q, %v; want none", ks, name, err)
		}
	}

	// Each refusal names what is wrong and the data centers there are,
	// and leaves no keyspace behind.
	for _, c := range []struct {
		name, local string
		replication cassandra.Replication
		what        string
		names       []string
	}{
		{name: "an unknown local data center is refused, naming the known ones",
			local: "no-such-dc",
			what:  "a local data center no node is in", names: []string{`"no-such-dc"`, local}},
		{name: "replicas in an unknown data center are refused before the keyspace is made",
			replication: cassandra.Replication{Strategy: cassandra.NetworkTopologyStrategy,
				DataCenters: map[string]int{local: 1, "no-such-dc": 1}},
			what: "replicas in a data center no node is in", names: []string{"no-such-dc", local}},
		{name: "a keyspace to create with no replica in the local data center is refused",
			local: local,
			replication: cassandra.Replication{Strategy: cassandra.NetworkTopologyStrategy,
				DataCenters: map[string]int{local: 0}},
			what: "a keyspace without replicas in the local data center", names: []string{"no replica", local}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.LocalDataCenter = c.local
			if c.replication.Strategy != "" {
				cfg.Replication = c.replication
			}
			refused(t, cfg, c.what, c.names...)
			notCreated(t, cfg.Keyspace)
		})
	}

	t.Run("a known local data center serves at LOCAL_QUORUM", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t)
		cfg.LocalDataCenter = local
		cfg.Replication = cassandra.Replication{Strategy: cassandra.NetworkTopologyStrategy,
			DataCenters: map[string]int{local: cassandratest.ReplicationFactor(t)}}
		d := open(t, cfg)
		if d.LocalDataCenter() != local {
			t.Errorf("LocalDataCenter() = %q, want %q", d.LocalDataCenter(), local)
		}
		now := time.Now().UnixMicro()
		write(t, d, "c", "a", "s1", now, now+int64(time.Hour/time.Microsecond))
		if got := summary(read(t, d, "c")); !strings.Contains(got, "s1") {
			t.Errorf("read back %s after a write at the local defaults", got)
		}
	})
}

// refused opens cfg, which must fail with an error naming each of names.
func refused(t *testing.T, cfg cassandra.Config, what string, names ...string) {
	t.Helper()
	d, err := cassandra.Open(ctxT(t), cfg)
	if err == nil {
		d.Close()
		t.Fatalf("Open accepted %s", what)
	}
	for _, want := range names {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
