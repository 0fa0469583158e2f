package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/internal/cassandratest"
)

// TestServeOnCassandra runs 'abacus serve --cassandra' against the cluster
// in ABACUS_TEST_CASSANDRA (skipped when unset) and counts through it.
func TestServeOnCassandra(t *testing.T) {
	t.Parallel()
	hosts := cassandratest.Hosts(t)
	keyspace := cassandratest.Keyspace(t)
	rf := cassandratest.ReplicationFactor(t)

	s := serveInProcess(t, nil, "--cassandra", strings.Join(hosts, ","), "--keyspace", keyspace,
		"--replication-factor", fmt.Sprint(rf), "--addr", "127.0.0.1:0", "--gc-interval", "0")
	env := map[string]string{"ABACUS_SERVER": s.base}

	for i := 0; i < 2; i++ {
		if r := cli(env, "counter", "add", "likes", "5"); r.code != 0 {
			t.Fatalf("add: %+v", r)
		}
	}
	if r := cli(env, "counter", "get", "likes"); r.code != 0 || r.stdout != "10\n" {
		t.Fatalf("get: %+v", r)
	}
	if r := cli(env, "namespace", "create", "uniq", "--type", "distinct", "--write-consistency", "QUORUM"); r.code != 0 {
		t.Fatalf("namespace create: %+v", r)
	}
	for _, item := range []string{"a", "b", "a"} {
		if r := cli(env, "--ns", "uniq", "counter", "add", "u", item); r.code != 0 {
			t.Fatalf("distinct add: %+v", r)
		}
	}
	if r := cli(env, "--ns", "uniq", "counter", "get", "u"); r.stdout != "2\n" {
		t.Fatalf("distinct get: %+v", r)
	}
	r := cli(env, "namespace", "list", "--json")
	var list api.NamespaceList
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list.Namespaces) != 2 {
		t.Fatalf("namespace list: %+v", r)
	}
	if r := cli(env, "gc"); r.code != 0 || !strings.HasPrefix(r.stdout, "collected 2 counters") {
		t.Fatalf("gc: %+v", r)
	}

	s.stop(t)
}
