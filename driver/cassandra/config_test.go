package cassandra

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := Config{Hosts: []string{"h"}}.withDefaults()
	if err := c.validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Port", c.Port, 9042},
		{"Keyspace", c.Keyspace, "abacus"},
		{"Strategy", c.Replication.Strategy, SimpleStrategy},
		{"ReplicationFactor", c.Replication.ReplicationFactor, 1},
		{"ReadConsistency", c.ReadConsistency, driver.Quorum},
		{"WriteConsistency", c.WriteConsistency, driver.Quorum},
		{"FoldConsistency", c.FoldConsistency, driver.Quorum},
		{"GCReadConsistency", c.GCReadConsistency, driver.All},
		{"Timeout", c.Timeout, 5 * time.Second},
		{"ConnectTimeout", c.ConnectTimeout, 5 * time.Second},
		{"NumConns", c.NumConns, 2},
		{"Schema", c.Schema, SchemaCreate},
		{"Logger", c.Logger, slog.Default()},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

// A local data center moves the read and write defaults to its own quorum
// and leaves the levels that must see every data center alone: a fold's
// read must see every replica, and a fold's write is not on any hot path.
// Levels the user gave are kept.
func TestLocalDataCenterDefaults(t *testing.T) {
	t.Parallel()
	c := Config{Hosts: []string{"h"}, LocalDataCenter: "dc1"}.withDefaults()
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if c.ReadConsistency != driver.LocalQuorum || c.WriteConsistency != driver.LocalQuorum {
		t.Errorf("read, write = %v, %v; want LOCAL_QUORUM", c.ReadConsistency, c.WriteConsistency)
	}
	if c.FoldConsistency != driver.Quorum || c.GCReadConsistency != driver.All {
		t.Errorf("fold, GC read = %v, %v; want QUORUM, ALL", c.FoldConsistency, c.GCReadConsistency)
	}
	given := Config{Hosts: []string{"h"}, LocalDataCenter: "dc1", ReadConsistency: driver.EachQuorum, WriteConsistency: driver.Quorum}.withDefaults()
	if given.ReadConsistency != driver.EachQuorum || given.WriteConsistency != driver.Quorum {
		t.Errorf("given levels replaced: read %v, write %v", given.ReadConsistency, given.WriteConsistency)
	}
}

// With a local data center, no node of another one may coordinate: the
// pool filter drops them, so LOCAL_QUORUM always means this one.
func TestLocalDataCenterRouting(t *testing.T) {
	t.Parallel()
	plain, err := Config{Hosts: []string{"h"}}.withDefaults().cluster()
	if err != nil {
		t.Fatal(err)
	}
	if plain.HostFilter != nil {
		t.Error("a host filter without a local data center")
	}
	cl, err := Config{Hosts: []string{"h"}, LocalDataCenter: "dc2"}.withDefaults().cluster()
	if err != nil {
		t.Fatal(err)
	}
	if cl.HostFilter == nil {
		t.Fatal("no host filter: nodes of other data centers could coordinate LOCAL_QUORUM requests")
	}
	for _, tc := range []struct {
		dc   string
		want bool
	}{{"dc2", true}, {"dc1", false}, {"", false}} {
		if got := inDataCenter("dc2", tc.dc); got != tc.want {
			t.Errorf("a host of %q is in the pool: %v, want %v", tc.dc, got, tc.want)
		}
	}
}

func TestCheckDataCenters(t *testing.T) {
	t.Parallel()
	dcs := map[string]int{"dc1": 2, "dc2": 1}
	c := Config{Hosts: []string{"127.0.0.1"}, LocalDataCenter: "dc3"}
	err := c.checkDataCenters(dcs)
	if err == nil {
		t.Fatal("an unknown local data center was accepted")
	}
	for _, want := range []string{`"dc3"`, "dc1 (2 nodes), dc2 (1 node)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	c.LocalDataCenter = "dc2"
	if err := c.checkDataCenters(dcs); err != nil {
		t.Errorf("a known data center was refused: %v", err)
	}
	c.LocalDataCenter = ""
	if err := c.checkDataCenters(nil); err != nil {
		t.Errorf("no local data center, refused: %v", err)
	}
}

func TestConfigWithDefaultsDoesNotAlias(t *testing.T) {
	t.Parallel()
	orig := Config{
		Hosts:       []string{"a"},
		Replication: Replication{Strategy: NetworkTopologyStrategy, DataCenters: map[string]int{"dc1": 3}},
	}
	c := orig.withDefaults()
	c.Hosts[0] = "changed"
	c.Replication.DataCenters["dc1"] = 1
	if orig.Hosts[0] != "a" || orig.Replication.DataCenters["dc1"] != 3 {
		t.Fatal("withDefaults shares slices or maps with its receiver")
	}
	if c.Replication.ReplicationFactor != 0 {
		t.Fatalf("NetworkTopologyStrategy got ReplicationFactor %d", c.Replication.ReplicationFactor)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := Config{Hosts: []string{"127.0.0.1"}}
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string // empty: valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"no hosts", func(c *Config) { c.Hosts = nil }, "Hosts is empty"},
		{"blank host", func(c *Config) { c.Hosts = []string{"a", " "} }, "Hosts[1] is empty"},
		{"port", func(c *Config) { c.Port = 70000 }, "Port 70000"},
		{"negative port", func(c *Config) { c.Port = -1 }, "Port -1"},
		{"keyspace upper case", func(c *Config) { c.Keyspace = "Abacus" }, "Keyspace"},
		{"keyspace digit first", func(c *Config) { c.Keyspace = "1abacus" }, "Keyspace"},
		{"keyspace quote", func(c *Config) { c.Keyspace = "a'b" }, "Keyspace"},
		{"keyspace 48", func(c *Config) { c.Keyspace = "k" + strings.Repeat("x", 47) }, ""},
		{"keyspace 49", func(c *Config) { c.Keyspace = "k" + strings.Repeat("x", 48) }, "Keyspace"},
		{"unknown strategy", func(c *Config) { c.Replication.Strategy = "LocalStrategy" }, "Strategy"},
		{"negative rf", func(c *Config) { c.Replication.ReplicationFactor = -1 }, "at least 1"},
		{"simple with dcs", func(c *Config) { c.Replication.DataCenters = map[string]int{"dc1": 1} }, "only for NetworkTopologyStrategy"},
		{"nts", func(c *Config) {
			c.Replication = Replication{Strategy: NetworkTopologyStrategy, DataCenters: map[string]int{"dc1": 3, "dc-2.x": 2}}
		}, ""},
		{"nts without dcs", func(c *Config) { c.Replication = Replication{Strategy: NetworkTopologyStrategy} }, "DataCenters is required"},
		{"nts with rf", func(c *Config) {
			c.Replication = Replication{Strategy: NetworkTopologyStrategy, ReplicationFactor: 3, DataCenters: map[string]int{"dc1": 3}}
		}, "only for SimpleStrategy"},
		{"nts bad dc name", func(c *Config) {
			c.Replication = Replication{Strategy: NetworkTopologyStrategy, DataCenters: map[string]int{"dc'1": 3}}
		}, "not a valid data center"},
		{"nts negative", func(c *Config) {
			c.Replication = Replication{Strategy: NetworkTopologyStrategy, DataCenters: map[string]int{"dc1": -3}}
		}, "negative"},
		{"read any", func(c *Config) { c.ReadConsistency = driver.Any }, "ReadConsistency cannot be ANY"},
		{"gc read any", func(c *Config) { c.GCReadConsistency = driver.Any }, "GCReadConsistency cannot be ANY"},
		{"write any", func(c *Config) { c.WriteConsistency = driver.Any }, ""},
		{"bad level", func(c *Config) { c.FoldConsistency = driver.Consistency(77) }, "FoldConsistency"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "Timeout"},
		{"negative connect timeout", func(c *Config) { c.ConnectTimeout = -time.Second }, "ConnectTimeout"},
		{"negative conns", func(c *Config) { c.NumConns = -2 }, "NumConns"},
		{"protocol 3", func(c *Config) { c.ProtocolVersion = 3 }, ""},
		{"protocol 2", func(c *Config) { c.ProtocolVersion = 2 }, "ProtocolVersion 2"},
		{"protocol 6", func(c *Config) { c.ProtocolVersion = 6 }, "ProtocolVersion 6"},
		{"password only", func(c *Config) { c.Password = "p" }, "Username is empty"},
		{"cert without key", func(c *Config) { c.TLS = &TLSConfig{CertFile: "c.pem"} }, "given together"},
		{"schema mode", func(c *Config) { c.Schema = SchemaMode(9) }, "schema mode"},
		{"local dc", func(c *Config) { c.LocalDataCenter = "dc-1.east" }, ""},
		{"local dc quote", func(c *Config) { c.LocalDataCenter = "dc'1" }, "LocalDataCenter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := ok
			tt.mod(&c)
			err := c.withDefaults().validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("no error, want one containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfigValidateReportsAll(t *testing.T) {
	t.Parallel()
	err := Config{Port: -1, Keyspace: "X"}.withDefaults().validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Hosts", "Port", "Keyspace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	stmts, err := Schema(Config{Keyspace: "k1", Replication: Replication{
		Strategy: NetworkTopologyStrategy, DataCenters: map[string]int{"dc2": 2, "dc1": 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 28 { // keyspace, namespaces, shards, two ledger, api_keys, counter_cuts, four queue, six queue columns added, three events, three counter-model tables, queue_pauses, ledger_entries, ledger_entry_days, ledger_rights and ledger_rights_dc
		t.Fatalf("got %d statements", len(stmts))
	}
	want := "CREATE KEYSPACE IF NOT EXISTS k1 WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 2}"
	if stmts[0] != want {
		t.Errorf("keyspace statement\n got %s\nwant %s", stmts[0], want)
	}
	var added []string
	for _, s := range stmts[1:] {
		switch {
		case strings.HasPrefix(s, "ALTER TABLE k1."):
			added = append(added, s)
		case !strings.HasPrefix(s, "CREATE TABLE IF NOT EXISTS k1."):
			t.Errorf("table statement %q", s)
		}
	}
	if want := []string{
		"ALTER TABLE k1.queue_messages ADD attributes blob",
		"ALTER TABLE k1.queue_dead ADD attributes blob",
		"ALTER TABLE k1.queues ADD spread int",
		"ALTER TABLE k1.queues ADD generation bigint",
		"ALTER TABLE k1.queues ADD deleted_at timestamp",
		"ALTER TABLE k1.queues ADD priorities int",
	}; !slices.Equal(added, want) {
		t.Errorf("columns added = %q, want %q", added, want)
	}
	if !strings.Contains(stmts[2], "tally blob static") || !strings.Contains(stmts[2], "PRIMARY KEY ((ns, counter), shard)") {
		t.Errorf("shards table: %s", stmts[2])
	}
	if !strings.Contains(stmts[3], "k1.ledgers") || !strings.Contains(stmts[4], "k1.ledger_claims") {
		t.Errorf("ledger tables: %s / %s", stmts[3], stmts[4])
	}
	if entries := stmts[len(stmts)-4]; !strings.Contains(entries, "k1.ledger_entries") || !strings.Contains(entries, "CLUSTERING ORDER BY (at DESC, actor DESC, negative DESC, seq DESC)") {
		t.Errorf("ledger_entries table: %s", entries)
	}
	if rights := stmts[len(stmts)-2]; !strings.Contains(rights, "k1.ledger_rights (") || !strings.Contains(rights, "PRIMARY KEY ((ns, ledger))") {
		t.Errorf("ledger_rights table: %s", rights)
	}
	if last := stmts[len(stmts)-1]; !strings.Contains(last, "k1.ledger_rights_dc (") || !strings.Contains(last, "PRIMARY KEY ((ns, ledger, dc))") {
		t.Errorf("ledger_rights_dc table: %s", last)
	}
	if !strings.Contains(stmts[5], "k1.api_keys") || !strings.Contains(stmts[5], "hash blob") {
		t.Errorf("api_keys table: %s", stmts[5])
	}
	simple, err := Schema(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "CREATE KEYSPACE IF NOT EXISTS abacus WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"; simple[0] != want {
		t.Errorf("default keyspace statement %q", simple[0])
	}
	if _, err := Schema(Config{Keyspace: "bad name"}); err == nil {
		t.Error("Schema accepted an invalid keyspace")
	}
}

func TestClusterConfig(t *testing.T) {
	t.Parallel()
	c := Config{Hosts: []string{"a", "b:9142"}, Username: "u", Password: "p",
		TLS: &TLSConfig{Config: &tls.Config{ServerName: "db"}}}.withDefaults()
	cl, err := c.cluster()
	if err != nil {
		t.Fatal(err)
	}
	if cl.Port != 9042 || cl.Timeout != 5*time.Second || cl.ConnectTimeout != 5*time.Second || cl.NumConns != 2 {
		t.Errorf("cluster = port %d timeout %v connect %v conns %d", cl.Port, cl.Timeout, cl.ConnectTimeout, cl.NumConns)
	}
	if cl.RetryPolicy != nil {
		t.Error("a retry policy is set; writes must not be retried by gocql")
	}
	if !cl.DisableSkipMetadata {
		t.Error("result metadata skipping is enabled; Cassandra 2.1.0 then garbles rows (TestManySessionsRacing)")
	}
	if cl.DisableInitialHostLookup {
		t.Error("initial host lookup disabled; the ring would not be discovered")
	}
	if a, ok := cl.Authenticator.(gocql.PasswordAuthenticator); !ok || a.Username != "u" || a.Password != "p" {
		t.Errorf("authenticator = %#v", cl.Authenticator)
	}
	if cl.SslOpts == nil || cl.SslOpts.Config.ServerName != "db" || !cl.SslOpts.EnableHostVerification ||
		cl.SslOpts.Config.InsecureSkipVerify {
		t.Errorf("TLS options = %+v", cl.SslOpts)
	}

	bad := Config{Hosts: []string{"a"}, TLS: &TLSConfig{CAFile: "/nonexistent/ca.pem"}}.withDefaults()
	if _, err := bad.cluster(); err == nil {
		t.Error("missing CA file accepted")
	}
}

func TestLevel(t *testing.T) {
	t.Parallel()
	if got, err := level(driver.Default, driver.LocalQuorum); err != nil || got != gocql.LocalQuorum {
		t.Errorf("level(Default, LocalQuorum) = %v, %v", got, err)
	}
	if got, err := level(driver.One, driver.All); err != nil || got != gocql.One {
		t.Errorf("level(One, All) = %v, %v", got, err)
	}
	if _, err := level(driver.Consistency(200), driver.All); err == nil {
		t.Error("level accepted an unknown consistency")
	}
	// Every named level converts, and to the level of the same name.
	for c := driver.One; c <= driver.Any; c++ {
		g, ok := gocqlConsistency(c)
		if !ok || g.String() != c.String() {
			t.Errorf("gocqlConsistency(%v) = %v, %v", c, g, ok)
		}
	}
	// Every decision is one across data centers (lwtSerial says why).
	if lwtSerial != gocql.Serial {
		t.Errorf("lightweight transactions run Paxos at %v, want SERIAL", lwtSerial)
	}
}

func TestReplicasIn(t *testing.T) {
	t.Parallel()
	opts := map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "3", "dc2": "3/1", "dc3": "0"}
	for dc, want := range map[string]int{"dc1": 3, "dc2": 3, "dc3": 0, "dc4": 0} {
		if got := replicasIn(opts, dc); got != want {
			t.Errorf("replicasIn(%s) = %d, want %d", dc, got, want)
		}
	}
}

// An insert whose first attempt's outcome is unknown stays unknown when a
// later attempt is refused: the first may have applied.
func TestEarlierUnknownIsKept(t *testing.T) {
	t.Parallel()
	refused := fmt.Errorf("x: %w", driver.ErrUnavailable)
	if err := earlierUnknown(true, refused); !errors.Is(err, driver.ErrUnknownOutcome) || !errors.Is(err, driver.ErrUnavailable) {
		t.Errorf("after an unknown attempt, a refused one gives %v; want unknown, wrapping the refusal", err)
	}
	if err := earlierUnknown(false, refused); err != refused {
		t.Errorf("without an unknown attempt: %v, want the refusal as is", err)
	}
	unknown := fmt.Errorf("y: %w", driver.ErrUnknownOutcome)
	if err := earlierUnknown(true, unknown); err != unknown {
		t.Errorf("an unknown last attempt: %v, want it as is", err)
	}
}
