package cassandratest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// EnvFaults must be "1" for tests that stop and restart nodes. Stopping a
// node disturbs every test using the cluster at that moment, including
// other packages that `go test ./...` runs in parallel, so fault tests run
// only when asked for (for example by a dedicated make target).
const EnvFaults = "ABACUS_TEST_CASSANDRA_FAULTS"

// scriptPath is the cluster script relative to the module root.
const scriptPath = "scripts/devcassandra"

// Cluster controls the nodes of the local cluster run by
// scripts/devcassandra.
type Cluster struct {
	t      testing.TB
	script string
}

// Faults returns a handle for stopping nodes of the 3-node cluster run by
// scripts/devcassandra, or skips the test, saying why, unless
// ABACUS_TEST_CASSANDRA names the script's three nodes (127.0.0.1, .2 and .3,
// or PREFIX.1-3 when ABACUS_DEV_IP_PREFIX is set),
// ABACUS_TEST_CASSANDRA_FAULTS=1, and the script can be found. Call it
// before doing expensive setup, so a skipped test costs nothing.
func Faults(t testing.TB) *Cluster {
	t.Helper()
	hosts := Hosts(t)
	if len(hosts) < 3 {
		t.Skipf("needs a 3-node cluster (scripts/devcassandra start 3); %s names %d host(s)", EnvHosts, len(hosts))
	}
	if os.Getenv(EnvFaults) != "1" {
		t.Skipf("set %s=1 to let this test stop and restart Cassandra nodes (it disturbs other tests using the cluster)", EnvFaults)
	}
	for i := 1; i <= 3; i++ {
		ip := fmt.Sprintf("%s.%d", devIPPrefix(), i)
		if !slices.ContainsFunc(hosts, func(h string) bool { return h == ip || h == ip+":9042" }) {
			t.Skipf("%s (%v) does not include %s, so it is not the scripts/devcassandra cluster", EnvHosts, hosts, ip)
		}
	}
	script, err := findScript()
	if err != nil {
		t.Skipf("cannot control the cluster's nodes: %v", err)
	}
	return &Cluster{t: t, script: script}
}

// devIPPrefix is the address prefix of scripts/devcassandra's nodes: node I
// listens on PREFIX.I.
func devIPPrefix() string {
	if p := os.Getenv("ABACUS_DEV_IP_PREFIX"); p != "" {
		return p
	}
	return "127.0.0"
}

// StopNode is Faults(t).StopNode(i): it skips the test unless fault tests
// are enabled, and otherwise stops node i until the test ends.
func StopNode(t testing.TB, i int) {
	t.Helper()
	Faults(t).StopNode(i)
}

// StopNode stops node i (1-3), keeping its data, and restarts it when the
// test ends, waiting until it serves CQL again.
func (c *Cluster) StopNode(i int) {
	c.t.Helper()
	if out, err := runScript(c.script, "stop-node", fmt.Sprint(i)); err != nil {
		c.t.Fatalf("cassandratest: stop-node %d: %v\n%s", i, err, out)
	}
	c.t.Cleanup(func() { c.StartNode(i) })
}

// StartNode starts node i again, waits until it serves CQL and until a
// schema change reaches every node (see settle); starting a running node is
// harmless.
func (c *Cluster) StartNode(i int) {
	c.t.Helper()
	if out, err := runScript(c.script, "start-node", fmt.Sprint(i)); err != nil {
		c.t.Errorf("cassandratest: start-node %d: %v\n%s", i, err, out)
		return
	}
	c.settle(i)
}

func runScript(script string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	return exec.CommandContext(ctx, script, args...).CombinedOutput()
}

// findScript walks up from the working directory (a package directory
// under go test) to the module root holding scripts/devcassandra.
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, scriptPath)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found above the working directory", scriptPath)
		}
		dir = parent
	}
}
