package systemtest

// The partition suite (`make test-partitions`, docs/faults.md,
// "Partitions"): real servers in two data centers of a real Cassandra
// cluster, two per data center, each routed to its own data center
// (--local-dc), every model under a steady load while a nemesis cuts the
// network for real (scripts/netsplit: iptables rules on the processes'
// cgroups) or freezes a node. After the nemesis heals, the suite waits
// until the servers of both data centers read the same values, times
// that, and the fault suite's checker compares every acknowledged
// operation with what the store holds.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/internal/cassandratest"
	"github.com/abacusdb/abacus/internal/servertest"
)

// A nemesis disturbs the cluster for hold, then heals.
type nemesis struct {
	name string
	// what it does, for the log and the table
	what string
	hold time.Duration
	// apply starts the disturbance and returns; Net.Heal ends it.
	apply func(net *cassandratest.Net)
}

// partitionServer is a server of the suite and its data center.
type partitionServer struct {
	*server
	dc string
}

func TestPartitions(t *testing.T) {
	net := cassandratest.Partitions(t)
	dcs := net.DataCenters()
	if len(dcs) != 2 {
		t.Skipf("the suite is written for two data centers; the cluster has %v", dcs)
	}
	dc1, dc2 := dcs[0], dcs[1]
	var repl []string
	for _, dc := range dcs {
		repl = append(repl, fmt.Sprintf("%s:%d", dc, min(len(net.NodesOf(dc)), 3)))
	}
	keyspace := cassandratest.Keyspace(t)
	// Short lifetimes, as in the racing-GC fault, so that shards and
	// events become collectable within a nemesis and the collections
	// racing under it have something to fold or to refuse.
	common := append([]string{"--keyspace", keyspace, "--replication", strings.Join(repl, ","), "--gc-interval", "0"},
		shortLifetimes(4*time.Second, time.Second, time.Second)...)
	start := func(i int, dc string) partitionServer {
		name := fmt.Sprintf("s%d", i+1)
		var hosts []string
		for _, n := range net.NodesOf(dc) {
			hosts = append(hosts, n.Addr)
		}
		args := append([]string{"--cassandra", strings.Join(hosts, ","), "--local-dc", dc}, common...)
		p := servertest.StartUnder(t, name, "/readyz", net.Wrapper(name), args...)
		return partitionServer{&server{p}, dc}
	}
	// The first creates the schema alone; the others start together.
	servers := make([]partitionServer, 4)
	servers[0] = start(0, dc1)
	var wg sync.WaitGroup
	for i, dc := range []string{dc1, dc2, dc2} {
		wg.Go(func() { servers[i+1] = start(i+1, dc) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	s1, s2, s3, s4 := servers[0].Name, servers[1].Name, servers[2].Name, servers[3].Name
	side1 := strings.Join([]string{dc1, s1, s2}, ",")
	side2 := strings.Join([]string{dc2, s3, s4}, ",")
	dc2Nodes := net.NodesOf(dc2)
	dc1Nodes := net.NodesOf(dc1)

	nemeses := []nemesis{
		{name: "node-isolated", what: fmt.Sprintf("%s alive but cut from every node and server", dc2Nodes[len(dc2Nodes)-1].Name), hold: 30 * time.Second,
			apply: func(net *cassandratest.Net) { net.Isolate(dc2Nodes[len(dc2Nodes)-1].Name) }},
		{name: "server-cut-local", what: fmt.Sprintf("%s cut from its data center's nodes (%s)", s1, dc1), hold: 30 * time.Second,
			apply: func(net *cassandratest.Net) { net.Cut(s1, dc1) }},
		{name: "dc-cut", what: fmt.Sprintf("%s and its servers cut from %s and its servers", dc1, dc2), hold: 60 * time.Second,
			apply: func(net *cassandratest.Net) { net.Cut(side1, side2) }},
		{name: "bridge", what: fmt.Sprintf("%s and %s cut apart but for %s, which sees both", dc1, dc2, dc1Nodes[len(dc1Nodes)-1].Name), hold: 30 * time.Second,
			apply: func(net *cassandratest.Net) { net.Bridge(dc1Nodes[len(dc1Nodes)-1].Name) }},
		{name: "node-frozen", what: fmt.Sprintf("%s stopped with SIGSTOP for 20 s, then continued", dc2Nodes[0].Name), hold: 20 * time.Second,
			apply: func(net *cassandratest.Net) { net.Freeze(dc2Nodes[0].Name) }},
	}
	if only := os.Getenv("ABACUS_TEST_NEMESIS"); only != "" {
		var keep []nemesis
		for _, n := range nemeses {
			if strings.Contains(","+only+",", ","+n.name+",") {
				keep = append(keep, n)
			}
		}
		nemeses = keep
	}
	for i, n := range nemeses {
		t.Run(n.name, func(t *testing.T) {
			runNemesis(t, net, n, fmt.Sprint(i), servers)
		})
	}
}

// runNemesis drives every model, in namespaces of its own, through every
// server while n disturbs the cluster; then heals, waits for the data
// centers to agree and checks the record.
func runNemesis(t *testing.T, net *cassandratest.Net, n nemesis, suffix string, servers []partitionServer) {
	models := partitionModels(suffix)
	createModels(t, servers[0].server, models)
	all := make([]*server, len(servers))
	for i, s := range servers {
		all[i] = s.server
	}
	stop := make(chan struct{})
	cfg := loadConfig{
		servers: func() []*server { return all },
		models:  models, workers: 2, counters: 3,
		stop: stop, pace: 100 * time.Millisecond,
		timeout:      func(int) time.Duration { return 10 * time.Second },
		retryUnknown: true, maxAttempts: 12,
	}
	var l *faultLedger
	loaded := make(chan struct{})
	go func() { defer close(loaded); l = runFaultLoad(t, cfg) }()
	// Wallets of floor 0 beside the models, one per ledger mode: debits
	// past their balance, with a reader watching for a value below the
	// floor through every server, during the nemesis and after it.
	wallets := []wallet{
		{ns: "wal" + suffix, name: "w", seed: 500},
		{ns: "walf" + suffix, name: "w", seed: 500, mode: "concurrent_retries_may_double"},
	}
	walletOps := make([][]*floorOp, len(wallets))
	watched := make([]func() floorWatch, len(wallets))
	var walletWG sync.WaitGroup
	watchStop := make(chan struct{})
	for i, wal := range wallets {
		startWalletsIn(t, servers[0].server, wal.ns, wal.mode, wal.seed, wal.name)
		walletWG.Go(func() {
			walletOps[i] = runFloorLoad(ledgerLoad{
				alive: cfg.servers, workers: 2, stop: stop, pace: cfg.pace,
				timeout: cfg.timeout,
			}, wal)
		})
		watched[i] = watchFloor(cfg.servers, watchStop, wal)
	}
	queue := runQueueLoad(t, "q"+suffix, cfg.servers, stop, cfg.pace, 10*time.Second)
	racer := startGCRacer(all, []string{models[0].ns, models[1].ns}, time.Second)

	time.Sleep(5 * time.Second)
	t.Logf("nemesis %s: %s", n.name, n.what)
	n.apply(net)
	// From here on the nemesis is certainly in effect: the attempts that
	// count as made during it start after this.
	cutAt := time.Now()
	time.Sleep(n.hold)
	net.Heal()
	healedAt := time.Now()
	t.Logf("healed after %v", healedAt.Sub(cutAt).Round(time.Millisecond))
	// The load stops at healing, so that the values stop moving once the
	// operations under way have ended (retries of unknown outcomes
	// included), and the time until every server reads the same is the
	// time the data centers take to converge.
	close(stop)
	<-loaded
	walletWG.Wait()
	<-queue.done
	var asserted []faultModel
	for _, m := range models {
		if !m.reportOnly {
			asserted = append(asserted, m)
		}
	}
	converged := waitForAgreement(t, asserted, cfg.counters, all, healedAt)
	t.Logf("every server read the same %v after healing", converged.Round(100*time.Millisecond))
	walletConverged := make([]time.Duration, len(wallets))
	for i, wal := range wallets {
		walletConverged[i] = waitForWallet(t, wal, all, healedAt)
	}
	close(watchStop)
	queue.drain(all)
	drained := time.Since(healedAt)
	racer.finish()
	rows := checkFault(t, "partition: "+n.name, l, cfg, all...)
	avail := availability(l, models, servers, cutAt, healedAt)
	report := func(row partitionRow) {
		t.Logf("%s", formatPartitionRow(row))
		reportMu.Lock()
		partitionRows = append(partitionRows, row)
		reportMu.Unlock()
	}
	for _, m := range models {
		report(partitionRow{nemesis: n.name, model: m.name, row: rows[m.name], converged: converged, during: avail[m.name]})
	}
	for i, wal := range wallets {
		name := "wallet"
		if wal.mode != "" {
			name = "wallet-f" // the mode without claims
		}
		seen := watched[i]()
		// Whether the load reaches the floor depends on how fast the
		// nemesis lets it go; the fault suite's floor rows must reach it.
		row := checkFloor(t, "partition: "+n.name+" "+name, walletOps[i], seen, all[0], wal, false)
		tries := make([][]attempt, len(walletOps[i]))
		for j, o := range walletOps[i] {
			tries[j] = o.tries
		}
		during := triesPerDataCenter(tries, servers, cutAt, healedAt)
		report(partitionRow{nemesis: n.name, model: name, row: row, converged: walletConverged[i],
			during: during, floored: true, below: seen.below})
		noInternalAnswers(t, name, tries)
		if n.name == "dc-cut" && wal.mode != "" {
			// Debits within a data center's share go on in both data
			// centers (docs/ledger.md, "Rights per data center"): every
			// attempt is answered, applied or refused for want of
			// rights (below_floor, rights_held), never unavailable.
			for dc, c := range answeredPerDataCenter(tries, servers, cutAt, healedAt) {
				if c[0] == 0 || float64(c[1]) < 0.99*float64(c[0]) {
					problemf(t, "%s: %s: %d of %d attempts in %s were applied or refused for want of rights while the data centers were cut apart; want at least 99%%", n.name, name, c[1], c[0], dc)
				}
			}
		}
	}
	report(partitionRow{nemesis: n.name, model: "queue", row: queue.check(t, "partition: "+n.name), converged: drained,
		during: triesPerDataCenter(queue.putTries(), servers, cutAt, healedAt)})
	noInternalAnswers(t, "queue", queue.tries())
	t.Logf("GC rounds under the nemesis: %d, folded %v, skipped %v, errors %v", racer.rounds, racer.folded, racer.skipped, racer.errs)
	writeHistory(t, n, cutAt, healedAt, l, models, wallets, walletOps, queue)
	noInternalErrors(t, l, models)
	for _, err := range racer.errs {
		if strings.Contains(err.Error(), `"code":"internal"`) {
			problemf(t, "a GC under the nemesis answered 500: %v", err)
		}
	}
	if n.name == "dc-cut" {
		// Writes that need no lightweight transaction and no other data
		// center go on in both (docs/guarantees.md, "Across data
		// centers"). The runs recorded in docs/faults.md took all of
		// them; the bound leaves room for a request caught by the cut.
		for _, name := range []string{"sharded", "events", "actor", "native"} {
			for dc, c := range avail[name] {
				if c[0] == 0 || float64(c[1]) < 0.99*float64(c[0]) {
					problemf(t, "%s: %s acknowledged %d of %d attempts in %s while the data centers were cut apart; want at least 99%%", n.name, name, c[1], c[0], dc)
				}
			}
		}
	}
}

// noInternalErrors fails the test for every answer that was a 500: a
// partition must be answered with a documented error (503 unavailable,
// not_applied or unknown_outcome), never with "internal".
func noInternalErrors(t *testing.T, l *faultLedger, models []faultModel) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range models {
		var tries [][]attempt
		for _, o := range l.ops[m.name] {
			tries = append(tries, o.attempts)
		}
		noInternalAnswers(t, m.name, tries)
	}
}

// noInternalAnswers fails the test if any of the operations' attempts
// was answered 500 internal.
func noInternalAnswers(t *testing.T, model string, ops [][]attempt) {
	t.Helper()
	n, first := 0, ""
	for _, attempts := range ops {
		for _, a := range attempts {
			if a.code == "internal" {
				if n == 0 {
					first = a.err.Error()
				}
				n++
			}
		}
	}
	if n > 0 {
		problemf(t, "%s: %d answers were 500 internal, the first: %s", model, n, first)
	}
}

// partitionModels are the fault suite's six models (the ledger in exact
// mode) in namespaces named for one nemesis, so that each nemesis is
// checked on its own record.
//
// Native counters are the baseline, reported but not asserted: after a
// partition, Cassandra's counter columns were seen to stay apart between
// the data centers (one read 60 where the other read 61, and more than 3
// minutes later still), where every Abacus model, written as plain
// columns, had converged within seconds.
func partitionModels(suffix string) []faultModel {
	models := faultModels(eventsOptions{bucket: 5, accept: 5, delay: 3, future: 5}, true)
	for i, m := range models {
		ns := m.ns + suffix
		models[i].create = strings.Replace(m.create, fmt.Sprintf(`"name":%q`, m.ns), fmt.Sprintf(`"name":%q`, ns), 1)
		models[i].ns = ns
		models[i].reportOnly = m.name == "native"
	}
	return models
}

// waitForAgreement reads every counter of every model through every server
// until they all read the same, and returns how long after healedAt that
// was. It fails the test after three minutes.
func waitForAgreement(t *testing.T, models []faultModel, counters int, readers []*server, healedAt time.Time) time.Duration {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		agree, why := readersAgree(ctx, models, counters, readers)
		cancel()
		if agree {
			return time.Since(healedAt)
		}
		if time.Now().After(deadline) {
			problemf(t, "the data centers still disagree 3 minutes after healing: %s", why)
			return time.Since(healedAt)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitForWallet reads the wallet through every reader until they all read
// the same, and returns how long after healedAt that was. It fails the
// test after three minutes.
func waitForWallet(t *testing.T, wal wallet, readers []*server, healedAt time.Time) time.Duration {
	t.Helper()
	m := faultModel{ns: wal.ns, kind: kindLedger}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		values, why := map[int64]bool{}, ""
		for _, s := range readers {
			v, err := readValue(ctx, s, m, wal.name)
			if err != nil {
				why = fmt.Sprintf("%s/%s through %s: %v", wal.ns, wal.name, s.Name, err)
				break
			}
			values[v] = true
		}
		cancel()
		if why == "" && len(values) == 1 {
			return time.Since(healedAt)
		}
		if time.Now().After(deadline) {
			problemf(t, "the wallet still reads differently 3 minutes after healing: %s %v", why, values)
			return time.Since(healedAt)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func readersAgree(ctx context.Context, models []faultModel, counters int, readers []*server) (bool, string) {
	for _, m := range models {
		for c := range counters {
			name := fmt.Sprintf("c%d", c)
			var first int64
			for i, s := range readers {
				v, err := readValue(ctx, s, m, name)
				if err != nil {
					return false, fmt.Sprintf("%s/%s through %s: %v", m.ns, name, s.Name, err)
				}
				if i == 0 {
					first = v
				} else if v != first {
					return false, fmt.Sprintf("%s/%s reads %d through %s, %d through %s", m.ns, name, first, readers[0].Name, v, s.Name)
				}
			}
		}
	}
	return true, ""
}

// dcAvailability is, per data center, how many attempts were sent to its
// servers while the nemesis was on, and how many were acknowledged.
type dcAvailability map[string][2]int

// availability counts the attempts that started between cutAt and
// healedAt, per model and data center of the server they went to.
func availability(l *faultLedger, models []faultModel, servers []partitionServer, cutAt, healedAt time.Time) map[string]dcAvailability {
	out := map[string]dcAvailability{}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range models {
		var tries [][]attempt
		for _, o := range l.ops[m.name] {
			tries = append(tries, o.attempts)
		}
		out[m.name] = triesPerDataCenter(tries, servers, cutAt, healedAt)
	}
	return out
}

// triesPerDataCenter counts the attempts that started between cutAt and
// healedAt, and those acknowledged, per data center of their server.
func triesPerDataCenter(ops [][]attempt, servers []partitionServer, cutAt, healedAt time.Time) dcAvailability {
	return perDataCenter(ops, servers, cutAt, healedAt, func(at attempt) bool { return at.out == acked })
}

// perDataCenter counts the attempts that started between cutAt and
// healedAt, and those that count says are good, per data center of their
// server.
func perDataCenter(ops [][]attempt, servers []partitionServer, cutAt, healedAt time.Time, count func(attempt) bool) dcAvailability {
	dcOf := map[string]string{}
	for _, s := range servers {
		dcOf[s.Name] = s.dc
	}
	a := dcAvailability{}
	for _, attempts := range ops {
		for _, at := range attempts {
			if at.start.Before(cutAt) || !at.start.Before(healedAt) {
				continue
			}
			c := a[dcOf[at.server]]
			c[0]++
			if count(at) {
				c[1]++
			}
			a[dcOf[at.server]] = c
		}
	}
	return a
}

// answeredPerDataCenter counts, per data center of their server, the
// attempts that started between cutAt and healedAt and those that got an
// answer about the request itself: applied, or refused for want of
// rights (below_floor, rights_held).
func answeredPerDataCenter(ops [][]attempt, servers []partitionServer, cutAt, healedAt time.Time) dcAvailability {
	return perDataCenter(ops, servers, cutAt, healedAt, func(at attempt) bool {
		return at.out == acked || at.code == "below_floor" || at.code == "rights_held"
	})
}

// partitionRow is one line of the partition table.
type partitionRow struct {
	nemesis, model string
	row            faultRow
	converged      time.Duration
	during         dcAvailability
	// floored rows count the reads, during the load and until the
	// servers agreed after healing, that showed a value below the floor.
	floored bool
	below   int
}

// partitionRows collects the suite's lines for TestMain's summary.
var partitionRows []partitionRow

const partitionHeader = "nemesis           model     ops  acked  unknown  refused   lost  double  below floor  converged  acknowledged while on (per data center)"

func formatPartitionRow(p partitionRow) string {
	dcs := make([]string, 0, len(p.during))
	for dc := range p.during {
		dcs = append(dcs, dc)
	}
	sort.Strings(dcs)
	var parts []string
	for _, dc := range dcs {
		c := p.during[dc]
		parts = append(parts, fmt.Sprintf("%s %d/%d (%.1f%%)", dc, c[1], c[0], 100*float64(c[1])/float64(max(c[0], 1))))
	}
	below := "–"
	if p.floored {
		below = fmt.Sprint(p.below)
	}
	return fmt.Sprintf("%-17s %-8s %4d  %5d  %7d  %7d  %5d  %6d  %11s  %8.1fs  %s",
		p.nemesis, p.model, p.row.ops, p.row.acked, p.row.unknown, p.row.failed, p.row.lost, p.row.double,
		below, p.converged.Seconds(), strings.Join(parts, ", "))
}

// writeHistory writes every operation of the run, with every attempt's
// server, times and answer, as JSON lines: the run's history, for a
// checker of one's own or a look at what happened when. The directory is
// $ABACUS_TEST_HISTORY_DIR, else abacus-partitions under the system's
// temporary directory.
func writeHistory(t *testing.T, n nemesis, cutAt, healedAt time.Time, l *faultLedger, models []faultModel, wallets []wallet, walletOps [][]*floorOp, queue *queueRun) {
	t.Helper()
	dir := os.Getenv("ABACUS_TEST_HISTORY_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "abacus-partitions")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("history not written: %v", err)
		return
	}
	path := filepath.Join(dir, n.name+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Logf("history not written: %v", err)
		return
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	type attemptRecord struct {
		Server  string    `json:"server"`
		Start   time.Time `json:"start"`
		End     time.Time `json:"end"`
		Outcome string    `json:"outcome"`
		Code    string    `json:"code,omitempty"`
		Timeout bool      `json:"client_timeout,omitempty"`
	}
	type opRecord struct {
		Model     string          `json:"model"`
		Namespace string          `json:"namespace"`
		Counter   string          `json:"counter"`
		Actor     string          `json:"actor,omitempty"`
		RequestID string          `json:"request_id"`
		Amount    int64           `json:"amount"`
		Acked     bool            `json:"acknowledged"`
		Attempts  []attemptRecord `json:"attempts"`
	}
	_ = enc.Encode(map[string]any{"nemesis": n.name, "what": n.what, "cut_at": cutAt, "healed_at": healedAt})
	names := map[outcome]string{acked: "acknowledged", failed: "refused", unknown: "unknown"}
	write := func(rec opRecord, attempts []attempt) bool {
		for _, a := range attempts {
			rec.Attempts = append(rec.Attempts, attemptRecord{Server: a.server, Start: a.start, End: a.end, Outcome: names[a.out], Code: a.code, Timeout: a.timeout})
		}
		if err := enc.Encode(rec); err != nil {
			t.Logf("history: %v", err)
			return false
		}
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range models {
		for _, o := range l.ops[m.name] {
			if !write(opRecord{Model: m.name, Namespace: m.ns, Counter: o.counter, Actor: o.actor, RequestID: o.id, Amount: o.amount, Acked: o.acked}, o.attempts) {
				return
			}
		}
	}
	for i, wal := range wallets {
		for _, o := range walletOps[i] {
			if !write(opRecord{Model: "wallet", Namespace: wal.ns, Counter: wal.name, RequestID: o.id, Amount: o.amount, Acked: o.acked}, o.tries) {
				return
			}
		}
	}
	queue.mu.Lock()
	defer queue.mu.Unlock()
	for _, p := range queue.puts {
		// A put has no request id; its body names it.
		if !write(opRecord{Model: "queue", Counter: queue.queue, RequestID: p.body, Amount: 1, Acked: p.try.out == acked}, []attempt{p.try}) {
			return
		}
	}
	t.Logf("history of %s: %s", n.name, path)
}
