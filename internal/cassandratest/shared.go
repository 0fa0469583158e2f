package cassandratest

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Shared keyspaces. Making a keyspace's schema takes half a minute on a
// three-node Cassandra 5.0 cluster, and most of a driver test's time was
// that. Tests that write only keys of their own and list nothing can share
// one keyspace per process instead; TestMain drops it with
// DropSharedKeyspaces.

var shared struct {
	mu    sync.Mutex
	names map[string]string   // label -> keyspace
	hosts map[string][]string // keyspace -> hosts, to drop it
}

// SharedKeyspace returns the keyspace this process shares under label,
// naming it on first use. Tests that use it must keep to keys no other
// test writes and must not list a table's contents.
func SharedKeyspace(t testing.TB, label string) string {
	t.Helper()
	hosts := Hosts(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if ks, ok := shared.names[label]; ok {
		return ks
	}
	healBeforeUse(t, hosts)
	if shared.names == nil {
		shared.names, shared.hosts = map[string]string{}, map[string][]string{}
	}
	ks := KeyspaceName("shared " + label)
	shared.names[label], shared.hosts[ks] = ks, hosts
	return ks
}

// DropSharedKeyspaces drops every keyspace SharedKeyspace named, best
// effort: a leftover keyspace costs disk, not correctness.
func DropSharedKeyspaces() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for ks, hosts := range shared.hosts {
		s, err := adminSession(hosts)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = s.Query("DROP KEYSPACE IF EXISTS " + ks).ExecContext(ctx)
		cancel()
	}
	shared.names, shared.hosts = nil, nil
}
