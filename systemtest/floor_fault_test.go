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
	id       string
	amount   int64 // signed
	acked    bool  // an attempt answered 200
	unknowns int   // attempts whose outcome is unknown
	refusals map[string]int
	retries  int
}

// floorLoad is the floor rows' load: workers × perWorker requests against
// one wallet, each attempt to a random server of alive(), a client timeout
// per attempt, retried with the same id on another server after a timeout,
// an unknown outcome or rights_held, up to ten attempts.
type floorLoad struct {
	alive     func() []*server
	workers   int
	perWorker int
	timeout   func(n int) time.Duration
	hook      func(done int) // called after each request ends
}

const floorNS, floorWallet, floorSeed = "wal", "w", 1000

func runFloorLoad(t *testing.T, cfg floorLoad) []*floorOp {
	t.Helper()
	var (
		mu   sync.Mutex
		ops  []*floorOp
		done atomic.Int64
		wg   sync.WaitGroup
	)
	path := fmt.Sprintf("/v1/namespaces/%s/ledgers/%s/", floorNS, floorWallet)
	for w := range cfg.workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for i := range cfg.perWorker {
				o := &floorOp{id: fmt.Sprintf("w%d-%d", w, i), amount: -(1 + rng.Int64N(20)), refusals: map[string]int{}}
				if i%10 == 9 {
					o.amount = 20
				}
				kind, amount := "debits", -o.amount
				if o.amount > 0 {
					kind, amount = "credits", o.amount
				}
				for n := 0; n < 10; n++ {
					servers := cfg.alive()
					s := servers[rng.IntN(len(servers))]
					if n > 0 {
						o.retries++
					}
					a, _ := postJSON(s.Base, path+kind, map[string]any{"amount": amount, "request_id": o.id}, cfg.timeout(n))
					if a.out == acked {
						o.acked = true
						break
					}
					if a.out == unknown {
						o.unknowns++
						continue
					}
					o.refusals[a.code]++
					if a.code == "below_floor" {
						break // this attempt's answer; an earlier unknown one stays unknown
					}
				}
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

// watchFloor reads the wallet through every server, round after round,
// until stop closes, and returns the lowest value any read saw and how
// many reads there were.
func watchFloor(alive func() []*server, stop <-chan struct{}) (lowest func() (int64, int)) {
	var (
		mu    sync.Mutex
		low   = int64(floorSeed)
		reads int
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		m := faultModel{ns: floorNS, kind: kindLedger}
		for {
			for _, s := range alive() {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				v, err := readValue(ctx, s, m, floorWallet)
				cancel()
				if err == nil {
					mu.Lock()
					low, reads = min(low, v), reads+1
					mu.Unlock()
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return func() (int64, int) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return low, reads
	}
}

// walletHistory lists every entry of the wallet's history through s.
func walletHistory(t *testing.T, s *server) map[string][]int64 {
	t.Helper()
	return ledgerHistory(t, s, floorNS, floorWallet)
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
func checkFloorFault(t *testing.T, fault string, ops []*floorOp, lowest int64, reads int, reader *server) {
	t.Helper()
	hist := walletHistory(t, reader)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	value, err := readValue(ctx, reader, faultModel{ns: floorNS, kind: kindLedger}, floorWallet)
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
	r.drift = value - (floorSeed + ackedSum)
	t.Logf("%s", formatRow(r))
	t.Logf("  %s: value %d = seed %d %+d listed; acknowledged %+d, of unknown outcome applied %+d; refusals by code %v; lowest of %d reads during the load %d",
		fault, value, floorSeed, listed-floorSeed, ackedSum, maybeSum, refusedBy, reads, lowest)
	if value != listed {
		problemf(t, "%s: the wallet's value %d is not the sum of its history %d", fault, value, listed)
	}
	if reads == 0 {
		problemf(t, "%s: no read of the wallet succeeded during the load, so the floor was never watched", fault)
	}
	if value < 0 || lowest < 0 {
		problemf(t, "%s: the wallet went below its floor of 0: final %d, lowest read %d", fault, value, lowest)
	}
	if refusedBy["below_floor"] == 0 {
		problemf(t, "%s: no debit was refused by the floor; the load never reached it", fault)
	}
	reportMu.Lock()
	reportRows = append(reportRows, r)
	reportMu.Unlock()
}

func startFloorWallet(t *testing.T, s *server) {
	t.Helper()
	createNamespace(t, s, fmt.Sprintf(`{"name":%q,"model":"ledger","ledger":{"floor":0}}`, floorNS))
	for n := 0; ; n++ {
		a, _ := postJSON(s.Base, fmt.Sprintf("/v1/namespaces/%s/ledgers/%s/credits", floorNS, floorWallet),
			map[string]any{"amount": floorSeed, "request_id": "seed"}, 30*time.Second)
		if a.out == acked {
			return
		}
		if n == 5 {
			fatalProblemf(t, "seeding the wallet: %v", a.err)
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
	var alive atomic.Pointer[[]*server]
	alive.Store(&servers)
	const workers, perWorker = 20, 25
	var killed atomic.Bool
	stop := make(chan struct{})
	lowest := watchFloor(func() []*server { return *alive.Load() }, stop)
	ops := runFloorLoad(t, floorLoad{
		alive: func() []*server { return *alive.Load() }, workers: workers, perWorker: perWorker,
		timeout: func(n int) time.Duration { return min(15*time.Millisecond<<n, 3*time.Second) },
		hook: func(done int) {
			if done == workers*perWorker/3 && killed.CompareAndSwap(false, true) {
				survivors := servers[:8]
				alive.Store(&survivors)
				servers[8].Kill()
				servers[9].Kill()
				t.Logf("killed %s and %s with SIGKILL", servers[8].Name, servers[9].Name)
			}
		},
	})
	close(stop)
	low, reads := lowest()
	if !killed.Load() {
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
	checkFloorFault(t, "floor-timeouts+kill", ops, low, reads, servers[0])
}

// Fault 6b. The same load with one Cassandra node of three stopped a third
// of the way in (replication factor 3, QUORUM) and started after it.
func TestFaultLedgerFloorNodeStopped(t *testing.T) {
	cluster := cassandratest.Faults(t) // skips unless node-loss tests are enabled
	servers := startFaultServers(t, 10, cassandraArgs(t), nil, nil)
	startFloorWallet(t, servers[0])
	const workers, perWorker = 20, 20
	var stopped atomic.Bool
	stop := make(chan struct{})
	all := func() []*server { return servers }
	lowest := watchFloor(all, stop)
	ops := runFloorLoad(t, floorLoad{
		alive: all, workers: workers, perWorker: perWorker,
		timeout: func(n int) time.Duration { return min(time.Second<<n, 5*time.Second) },
		hook: func(done int) {
			if done == workers*perWorker/3 && stopped.CompareAndSwap(false, true) {
				cluster.StopNode(3)
				t.Logf("stopped Cassandra node 3")
			}
		},
	})
	close(stop)
	low, reads := lowest()
	if !stopped.Load() {
		fatalProblemf(t, "the node was never stopped")
	}
	cluster.StartNode(3)
	t.Logf("started Cassandra node 3 again")
	checkFloorFault(t, "floor-node-stopped", ops, low, reads, servers[0])
}
