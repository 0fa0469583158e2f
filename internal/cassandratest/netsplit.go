package cassandratest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// EnvPartitions must be "1" for tests that cut the network between the
// nodes and servers of the two-data-center cluster (make test-partitions).
// Like stopping a node, a cut disturbs every test using the cluster.
const EnvPartitions = "ABACUS_TEST_PARTITIONS"

// netsplitPath is the partition script relative to the module root.
const netsplitPath = "scripts/netsplit"

// Node is one node of the dev cluster, as `scripts/devcassandra topology`
// prints it.
type Node struct {
	Name       string // node1, node2, …: what netsplit calls it
	Addr       string // its listen address, 127.0.0.I
	DataCenter string
}

// Net cuts and heals the network of the two-data-center dev cluster and
// of servers started under it (Run), through scripts/netsplit.
type Net struct {
	t        testing.TB
	script   string
	netsplit string
	Nodes    []Node
}

// Partitions returns a handle on the two-data-center cluster of
// scripts/devcassandra (start 4 --dcs 2), or skips the test, saying why,
// unless ABACUS_TEST_PARTITIONS=1, ABACUS_TEST_CASSANDRA names the
// script's nodes, they are in two data centers, and scripts/netsplit is
// found. Every cut it makes is healed when the test ends, and no process
// stays frozen.
func Partitions(t testing.TB) *Net {
	t.Helper()
	hosts := Hosts(t)
	if os.Getenv(EnvPartitions) != "1" {
		t.Skipf("set %s=1 to run network partition tests against the two-data-center cluster (make test-partitions)", EnvPartitions)
	}
	if os.Geteuid() != 0 {
		t.Skipf("cutting the network needs root (iptables rules and cgroups); running as uid %d", os.Geteuid())
	}
	script, err := findScript()
	if err != nil {
		t.Skipf("cannot control the cluster's network: %v", err)
	}
	netsplit := filepath.Join(filepath.Dir(filepath.Dir(script)), netsplitPath)
	if _, err := os.Stat(netsplit); err != nil {
		t.Skipf("cannot cut the network: %v", err)
	}
	out, err := runScript(script, "topology")
	if err != nil {
		t.Skipf("no topology from %s: %v\n%s", scriptPath, err, out)
	}
	nodes, err := parseTopology(out)
	if err != nil {
		t.Fatalf("cassandratest: %s topology: %v", scriptPath, err)
	}
	dcs := map[string]bool{}
	for _, n := range nodes {
		dcs[n.DataCenter] = true
		if !containsHost(hosts, n.Addr) {
			t.Skipf("%s (%v) does not include %s, so it is not the scripts/devcassandra cluster", EnvHosts, hosts, n.Addr)
		}
	}
	if len(dcs) < 2 {
		t.Skipf("needs a cluster of two data centers (scripts/devcassandra start 4 --dcs 2); it has %d", len(dcs))
	}
	n := &Net{t: t, script: script, netsplit: netsplit, Nodes: nodes}
	n.Heal()
	t.Cleanup(n.Heal)
	return n
}

func containsHost(hosts []string, addr string) bool {
	for _, h := range hosts {
		if h == addr || h == addr+":9042" {
			return true
		}
	}
	return false
}

// parseTopology reads lines "nodeI ADDR DC [CGROUP]".
func parseTopology(out []byte) ([]Node, error) {
	var nodes []Node
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 || !strings.HasPrefix(f[0], "node") {
			return nil, fmt.Errorf("unexpected line %q", sc.Text())
		}
		nodes = append(nodes, Node{Name: f[0], Addr: f[1], DataCenter: f[2]})
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no nodes in %q", out)
	}
	return nodes, nil
}

// DataCenters lists the cluster's data centers, sorted.
func (n *Net) DataCenters() []string {
	seen := map[string]bool{}
	var out []string
	for _, node := range n.Nodes {
		if !seen[node.DataCenter] {
			seen[node.DataCenter] = true
			out = append(out, node.DataCenter)
		}
	}
	sort.Strings(out)
	return out
}

// NodesOf lists the nodes of data center dc.
func (n *Net) NodesOf(dc string) []Node {
	var out []Node
	for _, node := range n.Nodes {
		if node.DataCenter == dc {
			out = append(out, node)
		}
	}
	return out
}

// Wrapper is the command prefix that runs a process as the netsplit
// member name, for servertest.StartUnder.
func (n *Net) Wrapper(name string) []string {
	return []string{n.netsplit, "run", name, "--"}
}

// Cut drops every packet between the members a and b (comma-separated
// names: nodes, data centers, servers run under Wrapper), both ways, until
// Heal.
func (n *Net) Cut(a, b string) { n.run("cut", a, b) }

// CutOneWay drops the packets from a to b only.
func (n *Net) CutOneWay(a, b string) { n.run("cut", a, b, "--oneway") }

// Isolate cuts member a from every other member.
func (n *Net) Isolate(a string) { n.run("isolate", a) }

// Bridge cuts the two data centers apart except for node m, which keeps
// talking to both sides.
func (n *Net) Bridge(m string) { n.run("bridge", m) }

// Freeze stops every process of member name (SIGSTOP) until Heal, as a
// long garbage-collection pause would, but for as long as the test says.
func (n *Net) Freeze(name string) { n.run("freeze", name) }

// Heal removes every cut and lets every frozen member go on.
func (n *Net) Heal() {
	n.t.Helper()
	if out, err := runScript(n.netsplit, "heal"); err != nil {
		n.t.Errorf("cassandratest: netsplit heal: %v\n%s", err, out)
	}
}

func (n *Net) run(args ...string) {
	n.t.Helper()
	if out, err := runScript(n.netsplit, args...); err != nil {
		n.t.Fatalf("cassandratest: netsplit %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
