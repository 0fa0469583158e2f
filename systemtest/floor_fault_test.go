package systemtest

// The fault suite's rows for ledger floors (docs/ledger.md, "Balance
// floors"): ten servers debit one wallet with floor 0, far past what it
// holds, while a fault strikes. The wallet's history says which requests
// were applied; against what the load generator saw, nothing acknowledged
// may be missing, nothing may be applied twice, nothing refused before any
// attempt of unknown outcome may be applied, and no read, during the load
// or after, may show the wallet below 0.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/internal/cassandratest"
)

// floorOp is one request of the floor load: a debit, or now and then a
// credit, under its own request id.
type floorOp struct {
	id     string
	amount int64 // signed
	attempts
}

// attempts is what the attempts at one request saw.
type attempts struct {
	acked    bool // an attempt answered 200
	unknowns int  // attempts whose outcome is unknown
	refusals map[string]int
	retries  int
	tries    []attempt // each attempt, with its server and times
}

// sendRetrying posts body to path on a random server of alive() with the
// client timeout timeout(n) for attempt n, and sends it again (the same
// request id) to another after anything but an answer or below_floor, up
// to ten attempts; a records what they saw.
func (a *attempts) sendRetrying(rng *rand.Rand, alive func() []*server, path string, body map[string]any, timeout func(n int) time.Duration) {
	a.refusals = map[string]int{}
	for n := 0; n < 10; n++ {
		servers := alive()
		s := servers[rng.IntN(len(servers))]
		if n > 0 {
			a.retries++
		}
		start := time.Now()
		at, _ := postJSON(s.Base, path, body, timeout(n))
		at.server, at.start, at.end = s.Name, start, time.Now()
		a.tries = append(a.tries, at)
		if at.out == acked {
			a.acked = true
			return
		}
		if at.out == unknown {
			a.unknowns++
			continue
		}
		a.refusals[at.code]++
		if at.code == "below_floor" {
			return // this attempt's answer; an earlier unknown one stays unknown
		}
	}
}

// ledgerLoad is a ledger fault row's load: workers × perWorker requests,
// each sent by attempts.sendRetrying to random servers of alive() with the
// client timeout timeout(n) for attempt n.
type ledgerLoad struct {
	alive     func() []*server
	workers   int
	perWorker int // 0: until stop closes
	timeout   func(n int) time.Duration
	hook      func(done int) // called after each request ends
	// stop, when not nil, ends the load once closed; each worker waits
	// pace between its requests.
	stop <-chan struct{}
	pace time.Duration
}

// runLedgerLoad runs cfg's workers; each makes its perWorker requests one after
// another with send (its worker number, the request's, and a random source
// of its own) and collects what send returns.
func runLedgerLoad[T any](cfg ledgerLoad, send func(rng *rand.Rand, w, i int) T) []T {
	var (
		mu   sync.Mutex
		ops  []T
		done atomic.Int64
		wg   sync.WaitGroup
	)
	for w := range cfg.workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for i := 0; cfg.perWorker == 0 || i < cfg.perWorker; i++ {
				if cfg.stop != nil {
					select {
					case <-cfg.stop:
						return
					case <-time.After(cfg.pace):
					}
				}
				o := send(rng, w, i)
				mu.Lock()
				ops = append(ops, o)
				mu.Unlock()
				if cfg.hook != nil {
					cfg.hook(int(done.Add(1)))
				}
			}
		})
	}
	wg.Wait()
	return ops
}

// twoKilled is the ledger rows' server fault: once at requests of the
// load have ended, the last two servers are killed with SIGKILL and the
// load goes on on the others.
type twoKilled struct {
	servers []*server
	live    atomic.Pointer[[]*server]
	done    atomic.Bool
}

func killTwo(servers []*server) *twoKilled {
	k := &twoKilled{servers: servers}
	k.live.Store(&servers)
	return k
}

// alive returns the servers not killed.
func (k *twoKilled) alive() []*server { return *k.live.Load() }

// at returns the load's hook that kills them after at requests.
func (k *twoKilled) at(t *testing.T, at int) func(done int) {
	return func(done int) {
		if done == at && k.done.CompareAndSwap(false, true) {
			n := len(k.servers)
			survivors := k.servers[:n-2]
			k.live.Store(&survivors)
			k.servers[n-2].Kill()
			k.servers[n-1].Kill()
			t.Logf("killed %s and %s with SIGKILL", k.servers[n-2].Name, k.servers[n-1].Name)
		}
	}
}

// nodeStopped is the ledger rows' store fault: once at requests of the
// load have ended, Cassandra node 3 of 3 is stopped.
type nodeStopped struct {
	cluster *cassandratest.Cluster
	done    atomic.Bool
}

func (s *nodeStopped) at(t *testing.T, at int) func(done int) {
	return func(done int) {
		if done == at && s.done.CompareAndSwap(false, true) {
			s.cluster.StopNode(3)
			t.Logf("stopped Cassandra node 3")
		}
	}
}

// restart starts the stopped node again, failing the test if the load
// never stopped it.
func (s *nodeStopped) restart(t *testing.T) {
	t.Helper()
	if !s.done.Load() {
		fatalProblemf(t, "the node was never stopped")
	}
	s.cluster.StartNode(3)
	t.Logf("started Cassandra node 3 again")
}

// wallet is a ledger of floor 0 that a floor load debits: its namespace,
// its name, what was credited to it before the load, and its namespace's
// ledger mode ("" for the default, exact).
type wallet struct {
	ns, name, mode string
	seed           int64
}

// faultWallet is the wallet of the fault suite's floor rows.
var faultWallet = wallet{ns: "wal", name: "w", seed: 1000}

// runFloorLoad debits one wallet (and now and then credits it), each
// request under its own id.
func runFloorLoad(cfg ledgerLoad, wal wallet) []*floorOp {
	path := fmt.Sprintf("/v1/namespaces/%s/ledgers/%s/", wal.ns, wal.name)
	return runLedgerLoad(cfg, func(rng *rand.Rand, w, i int) *floorOp {
		o := &floorOp{id: fmt.Sprintf("w%d-%d", w, i), amount: -(1 + rng.Int64N(20))}
		if i%10 == 9 {
			o.amount = 20
		}
		kind, amount := "debits", -o.amount
		if o.amount > 0 {
			kind, amount = "credits", o.amount
		}
		o.sendRetrying(rng, cfg.alive, path+kind, map[string]any{"amount": amount, "request_id": o.id}, cfg.timeout)
		return o
	})
}

// floorWatch is what the reads of a wallet during a load saw.
type floorWatch struct {
	lowest int64 // the lowest value read
	reads  int   // reads that answered
	below  int   // reads below the floor of 0
}

// watchFloor reads the wallet through every server, round after round,
// until stop closes, and returns what the reads saw.
func watchFloor(alive func() []*server, stop <-chan struct{}, wal wallet) (watched func() floorWatch) {
	var (
		mu   sync.Mutex
		seen = floorWatch{lowest: wal.seed}
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		m := faultModel{ns: wal.ns, kind: kindLedger}
		for {
			for _, s := range alive() {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				v, err := readValue(ctx, s, m, wal.name)
				cancel()
				if err == nil {
					mu.Lock()
					seen.lowest, seen.reads = min(seen.lowest, v), seen.reads+1
					if v < 0 {
						seen.below++
					}
					mu.Unlock()
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return func() floorWatch {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// ledgerHistory lists every entry of a ledger's history through s: the
// signed amounts listed under each request id.
func ledgerHistory(t *testing.T, s *server, ns, ledger string) map[string][]int64 {
	t.Helper()
	got := map[string][]int64{}
	after := ""
	for {
		u := fmt.Sprintf("%s/v1/namespaces/%s/ledgers/%s/entries?limit=1000&after=%s", s.Base, ns, ledger, url.QueryEscape(after))
		resp, err := httpClient.Get(u)
		if err != nil {
			fatalProblemf(t, "reading the history: %v", err)
		}
		var page struct {
			Entries []struct {
				RequestID string `json:"request_id"`
				Amount    int64  `json:"amount"`
			} `json:"entries"`
			Next string `json:"next"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			fatalProblemf(t, "reading the history: HTTP %d, %v", resp.StatusCode, err)
		}
		for _, e := range page.Entries {
			got[e.RequestID] = append(got[e.RequestID], e.Amount)
		}
		if after = page.Next; after == "" {
			return got
		}
	}
}

// checkFloorFault compares the load's record with the wallet's history
// and value, logs the fault's row and fails the test on any violation.
func checkFloorFault(t *testing.T, fault string, ops []*floorOp, seen floorWatch, reader *server) {
	t.Helper()
	r := checkFloor(t, fault, ops, seen, reader, faultWallet, true)
	reportMu.Lock()
	reportRows = append(reportRows, r)
	reportMu.Unlock()
}

// checkFloor compares a floor load's record with the wallet's history and
// value, logs what it found and fails the test on any violation, and on a
// load that never reached the floor if reach says it must; it returns the
// load's row.
func checkFloor(t *testing.T, fault string, ops []*floorOp, seen floorWatch, reader *server, wal wallet, reach bool) faultRow {
	t.Helper()
	hist := ledgerHistory(t, reader, wal.ns, wal.name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	value, err := readValue(ctx, reader, faultModel{ns: wal.ns, kind: kindLedger}, wal.name)
	if err != nil {
		fatalProblemf(t, "reading the wallet: %v", err)
	}
	r := faultRow{fault: fault, model: "ledger-floor", ops: len(ops), value: value}
	listed := int64(0)
	for id, amounts := range hist {
		for _, a := range amounts {
			listed += a
		}
		if len(amounts) > 1 {
			r.double += int64(len(amounts) - 1)
			problemf(t, "%s: request %s is applied %d times: %v", fault, id, len(amounts), amounts)
		}
	}
	refusedBy := map[string]int{}
	var ackedSum, maybeSum int64
	for _, o := range ops {
		r.retries += o.retries
		for code, n := range o.refusals {
			refusedBy[code] += n
		}
		amounts, applied := hist[o.id]
		switch {
		case o.acked:
			r.acked++
			ackedSum += o.amount
			if !applied {
				r.lost++
				problemf(t, "%s: request %s (%d) was acknowledged but is not in the history", fault, o.id, o.amount)
			}
		case o.unknowns > 0:
			r.unknown++
			if applied {
				maybeSum += o.amount // counted: an attempt of unknown outcome may apply
			}
		default:
			r.failed++
			if applied {
				r.double++
				problemf(t, "%s: request %s (%d) was refused on every attempt, yet applied: %v", fault, o.id, o.amount, amounts)
			}
		}
		if applied && amounts[0] != o.amount {
			problemf(t, "%s: request %s listed with amount %v, sent %d", fault, o.id, amounts, o.amount)
		}
	}
	r.drift = value - (wal.seed + ackedSum)
	t.Logf("%s", formatRow(r))
	t.Logf("  %s: value %d = seed %d %+d listed; acknowledged %+d, of unknown outcome applied %+d; refusals by code %v; lowest of %d reads during the load %d",
		fault, value, wal.seed, listed-wal.seed, ackedSum, maybeSum, refusedBy, seen.reads, seen.lowest)
	if value != listed {
		problemf(t, "%s: the wallet's value %d is not the sum of its history %d", fault, value, listed)
	}
	if seen.reads == 0 {
		problemf(t, "%s: no read of the wallet succeeded during the load, so the floor was never watched", fault)
	}
	if value < 0 || seen.lowest < 0 {
		problemf(t, "%s: the wallet went below its floor of 0: final %d, lowest read %d (%d reads below it)", fault, value, seen.lowest, seen.below)
	}
	if reach && refusedBy["below_floor"] == 0 {
		problemf(t, "%s: no debit was refused by the floor; the load never reached it", fault)
	}
	return r
}

func startFloorWallet(t *testing.T, s *server) {
	t.Helper()
	startWallets(t, s, faultWallet.ns, faultWallet.seed, faultWallet.name)
}

// startWallets makes a ledger namespace of floor 0 and credits seed to
// each wallet.
func startWallets(t *testing.T, s *server, ns string, seed int64, wallets ...string) {
	t.Helper()
	startWalletsIn(t, s, ns, "", seed, wallets...)
}

// startWalletsIn is startWallets in a namespace of the given ledger mode
// ("" for the default).
func startWalletsIn(t *testing.T, s *server, ns, mode string, seed int64, wallets ...string) {
	t.Helper()
	ledger := map[string]any{"floor": 0}
	if mode != "" {
		ledger["mode"] = mode
	}
	body, _ := json.Marshal(map[string]any{"name": ns, "model": "ledger", "ledger": ledger})
	createNamespace(t, s, string(body))
	for _, w := range wallets {
		for n := 0; ; n++ {
			a, _ := postJSON(s.Base, fmt.Sprintf("/v1/namespaces/%s/ledgers/%s/credits", ns, w),
				map[string]any{"amount": seed, "request_id": "seed"}, 30*time.Second)
			if a.out == acked {
				break
			}
			if n == 5 {
				fatalProblemf(t, "seeding %s: %v", w, a.err)
			}
		}
	}
}

// Fault 6a. Ten servers debit one wallet with floor 0 past its balance.
// Clients give up after a few milliseconds and retry on another server;
// a third of the way in, two servers are killed with SIGKILL (their
// rights stay held: debits the balance would cover may then be refused
// with rights_held, never applied below the floor).
func TestFaultLedgerFloorTimeoutsAndKill(t *testing.T) {
	faultSuite(t)
	servers := startFaultServers(t, 10, cassandraArgs(t), nil, nil)
	startFloorWallet(t, servers[0])
	const workers, perWorker = 20, 25
	kill := killTwo(servers)
	stop := make(chan struct{})
	watched := watchFloor(kill.alive, stop, faultWallet)
	ops := runFloorLoad(ledgerLoad{
		alive: kill.alive, workers: workers, perWorker: perWorker,
		timeout: func(n int) time.Duration { return min(15*time.Millisecond<<n, 3*time.Second) },
		hook:    kill.at(t, workers*perWorker/3),
	}, faultWallet)
	close(stop)
	seen := watched()
	if !kill.done.Load() {
		fatalProblemf(t, "the kill never happened")
	}
	timedOut := 0
	for _, o := range ops {
		if o.unknowns > 0 {
			timedOut++
		}
	}
	if timedOut == 0 {
		problemf(t, "no attempt had an unknown outcome: the client-timeout fault was not injected")
	}
	checkFloorFault(t, "floor-timeouts+kill", ops, seen, servers[0])
}

// Fault 6b. The same load with one Cassandra node of three stopped a third
// of the way in (replication factor 3, QUORUM) and started after it.
func TestFaultLedgerFloorNodeStopped(t *testing.T) {
	cluster := cassandratest.Faults(t) // skips unless node-loss tests are enabled
	servers := startFaultServers(t, 10, cassandraArgs(t), nil, nil)
	startFloorWallet(t, servers[0])
	const workers, perWorker = 20, 20
	node := &nodeStopped{cluster: cluster}
	stop := make(chan struct{})
	all := func() []*server { return servers }
	watched := watchFloor(all, stop, faultWallet)
	ops := runFloorLoad(ledgerLoad{
		alive: all, workers: workers, perWorker: perWorker,
		timeout: func(n int) time.Duration { return min(time.Second<<n, 5*time.Second) },
		hook:    node.at(t, workers*perWorker/3),
	}, faultWallet)
	close(stop)
	seen := watched()
	node.restart(t)
	checkFloorFault(t, "floor-node-stopped", ops, seen, servers[0])
}
