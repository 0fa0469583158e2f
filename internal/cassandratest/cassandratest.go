// Package cassandratest helps tests run against a real Cassandra: it reads
// the cluster's address from the environment, hands out a fresh keyspace
// per test and drops it afterwards, and can stop and restart nodes of the
// local cluster run by scripts/devcassandra for fault tests.
//
// It depends on gocql only, not on driver/cassandra, so that package's own
// tests can use it without an import cycle.
package cassandratest

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/internal/randomid"
	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// EnvHosts names the environment variable holding the comma-separated
// contact points, e.g. "127.0.0.1" or "127.0.0.1,127.0.0.2,127.0.0.3".
const EnvHosts = "ABACUS_TEST_CASSANDRA"

const skipMessage = EnvHosts + " is not set; skipping test against a real Cassandra (make test starts one)"

// keyspacePrefix marks keyspaces made by tests, so stray ones left by a
// killed test run are easy to find and drop.
const keyspacePrefix = "t_"

// Hosts returns the contact points from ABACUS_TEST_CASSANDRA, or skips the
// test when it is unset.
func Hosts(t testing.TB) []string {
	t.Helper()
	hosts := parseHosts(os.Getenv(EnvHosts))
	if len(hosts) == 0 {
		t.Skip(skipMessage)
	}
	return hosts
}

func parseHosts(v string) []string {
	var hosts []string
	for _, h := range strings.Split(v, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// ReplicationFactor is the replication factor tests should use: one
// replica per configured host, at most three. With three hosts QUORUM
// survives one node down while ALL does not, which fault tests rely on.
func ReplicationFactor(t testing.TB) int {
	t.Helper()
	return min(len(Hosts(t)), 3)
}

// Keyspace returns a new keyspace name for this test, unique across tests
// and runs, and drops the keyspace (if the test created it) when the test
// ends. The name is the test's name made CQL-safe and truncated, plus a
// random suffix: t_<name>_<8 hex>, at most 48 characters.
func Keyspace(t testing.TB) string {
	t.Helper()
	hosts := Hosts(t)
	name := KeyspaceName(t.Name())
	healBeforeUse(t, hosts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := adminSession(hosts)
		if err == nil {
			err = s.Query("DROP KEYSPACE IF EXISTS " + name).ExecContext(ctx)
		}
		if err != nil {
			// Best effort: a leftover keyspace costs disk, not correctness.
			t.Logf("cassandratest: dropping keyspace %s: %v", name, err)
		}
	})
	return name
}

// KeyspaceName derives a fresh keyspace name from a test name.
func KeyspaceName(testName string) string {
	var b strings.Builder
	b.WriteString(keyspacePrefix)
	underscore := true // avoid "t__"
	for _, r := range strings.ToLower(testName) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		switch {
		case ok:
			b.WriteRune(r)
			underscore = false
		case !underscore:
			b.WriteByte('_')
			underscore = true
		}
	}
	const maxLen, suffixLen = 48, 9 // "_" + 8 hex digits
	base := strings.TrimRight(b.String(), "_")
	if len(base) > maxLen-suffixLen {
		base = strings.TrimRight(base[:maxLen-suffixLen], "_")
	}
	return base + "_" + randomid.Hex(4)
}

// Session returns a session on the test cluster, shared by all tests of
// the process, for assertions the driver API does not offer (inspecting
// rows, writing malformed ones). Callers must not close it.
func Session(t testing.TB) *gocql.Session {
	t.Helper()
	s, err := adminSession(Hosts(t))
	if err != nil {
		t.Fatalf("cassandratest: connecting to %v: %v", Hosts(t), err)
	}
	return s
}

var (
	sessionsMu sync.Mutex
	sessions   = map[string]*gocql.Session{}
)

// adminSession returns a process-wide session per host list. It stays open
// until the test binary exits, which avoids reconnecting for every cleanup.
func adminSession(hosts []string) (*gocql.Session, error) {
	key := strings.Join(hosts, ",")
	sessionsMu.Lock()
	defer sessionsMu.Unlock()
	if s, ok := sessions[key]; ok && !s.Closed() {
		return s, nil
	}
	cl := gocql.NewCluster(hosts...)
	cl.Consistency = gocql.Quorum
	// Schema changes on a busy dev node can take seconds.
	cl.Timeout = 30 * time.Second
	cl.ConnectTimeout = 10 * time.Second
	cl.NumConns = 1
	cl.Metadata.CacheMode = gocql.KeyspaceOnly
	s, err := cl.CreateSession()
	if err != nil {
		return nil, err
	}
	sessions[key] = s
	return s, nil
}

// PaxosVariant reports the paxos_variant the test cluster runs
// lightweight transactions with, "v1" or "v2": "v1" on releases before 4.1
// (which have no other) and on nodes whose settings table does not name
// one. Cassandra's variants that drop linearizable reads count as their
// base. When ABACUS_DEV_PAXOS says which variant scripts/devcassandra
// started the cluster with, another answer fails the test, so a leg meant
// to run v2 cannot pass on v1 unnoticed.
//
// v2 counts a Paxos quorum from the replicas a partition has in the ring,
// where v1 counts it from the keyspace's replication factor, so the two
// differ when the factor is larger than the cluster.
func PaxosVariant(t testing.TB) string {
	t.Helper()
	s := Session(t)
	major, err := releaseMajor(s)
	if err != nil {
		t.Fatalf("cassandratest: reading the release: %v", err)
	}
	v := "v1"
	if major >= 4 {
		var setting string
		err = s.Query("SELECT value FROM system_views.settings WHERE name = 'paxos_variant'").Scan(&setting)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
		case err != nil:
			t.Fatalf("cassandratest: reading paxos_variant: %v", err)
		case strings.HasPrefix(setting, "v2"):
			v = "v2"
		}
	}
	if want := os.Getenv("ABACUS_DEV_PAXOS"); want != "" && want != v {
		t.Fatalf("cassandratest: the cluster runs paxos_variant %s, but ABACUS_DEV_PAXOS=%s", v, want)
	}
	return v
}
