package systemtest

// The fault suite's row for transfers (docs/ledger-transfers.md): ten
// servers move money among four wallets with floor 0 while clients time
// out and retry elsewhere and two servers are killed. Every transfer must
// be in both wallets' histories or in neither, once; acknowledged ones in
// both, ones refused on every attempt in neither; no wallet may go below
// 0; and the wallets' sum must stay what was put in.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/internal/cassandratest"
)

const transferNS, transferSeed = "pay", 200

var transferWallets = []string{"w0", "w1", "w2", "w3"}

// transferOp is one transfer of the load and what its attempts saw.
type transferOp struct {
	id       string
	from, to string
	amount   int64
	acked    bool
	unknowns int
	refusals map[string]int
	retries  int
}

// transferLoad is the transfer rows' load: workers × perWorker transfers
// between random wallets, each attempt to a random server of alive(), a
// client timeout per attempt, retried with the same id on another server
// after anything but an answer or below_floor, up to ten attempts.
type transferLoad struct {
	alive     func() []*server
	workers   int
	perWorker int
	timeout   func(n int) time.Duration
	hook      func(done int) // called after each transfer ends
}

func runTransferLoad(cfg transferLoad) []*transferOp {
	var (
		done atomic.Int64
		mu   sync.Mutex
		ops  []*transferOp
		wg   sync.WaitGroup
	)
	for w := range cfg.workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range cfg.perWorker {
				from := rng.IntN(len(transferWallets))
				to := (from + 1 + rng.IntN(len(transferWallets)-1)) % len(transferWallets)
				o := &transferOp{id: fmt.Sprintf("t%d-%d", w, i), from: transferWallets[from], to: transferWallets[to],
					amount: 1 + rng.Int64N(60), refusals: map[string]int{}}
				path := fmt.Sprintf("/v1/namespaces/%s/ledgers/%s/transfers", transferNS, o.from)
				for n := 0; n < 10; n++ {
					servers := cfg.alive()
					s := servers[rng.IntN(len(servers))]
					if n > 0 {
						o.retries++
					}
					a, _ := postJSON(s.Base, path, map[string]any{"to": o.to, "amount": o.amount, "request_id": o.id}, cfg.timeout(n))
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
						break
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

// startTransferWallets makes the floored namespace and puts transferSeed
// into each wallet.
func startTransferWallets(t *testing.T, s *server) {
	t.Helper()
	createNamespace(t, s, fmt.Sprintf(`{"name":%q,"model":"ledger","ledger":{"floor":0}}`, transferNS))
	for _, w := range transferWallets {
		for n := 0; ; n++ {
			a, _ := postJSON(s.Base, fmt.Sprintf("/v1/namespaces/%s/ledgers/%s/credits", transferNS, w),
				map[string]any{"amount": transferSeed, "request_id": "seed"}, 30*time.Second)
			if a.out == acked {
				break
			}
			if n == 5 {
				fatalProblemf(t, "seeding %s: %v", w, a.err)
			}
		}
	}
}

// Fault 6c. Ten servers, 20 clients, each making transfers between random
// wallets of floor 0 (amounts up to 60 against 200 in each, so the floor
// refuses some); clients give up after a few milliseconds and retry the
// same request id on another server; a third of the way in, two servers
// are killed with SIGKILL.
func TestFaultLedgerTransfersTimeoutsAndKill(t *testing.T) {
	faultSuite(t)
	servers := startFaultServers(t, 10, cassandraArgs(t), nil, nil)
	startTransferWallets(t, servers[0])
	var alive atomic.Pointer[[]*server]
	alive.Store(&servers)
	const workers, perWorker = 20, 20
	var killed atomic.Bool
	ops := runTransferLoad(transferLoad{
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
	if !killed.Load() {
		fatalProblemf(t, "the kill never happened")
	}
	checkTransferFault(t, "transfer-timeouts+kill", ops, servers[0], true)
}

// Fault 6d. The same load with one Cassandra node of three stopped a third
// of the way in (replication factor 3, QUORUM) and started after it: the
// logged batches of transfers under way lose a replica, and perhaps a
// batch log.
func TestFaultLedgerTransfersNodeStopped(t *testing.T) {
	cluster := cassandratest.Faults(t) // skips unless node-loss tests are enabled
	servers := startFaultServers(t, 10, cassandraArgs(t), nil, nil)
	startTransferWallets(t, servers[0])
	const workers, perWorker = 20, 15
	var stopped atomic.Bool
	ops := runTransferLoad(transferLoad{
		alive: func() []*server { return servers }, workers: workers, perWorker: perWorker,
		timeout: func(n int) time.Duration { return min(time.Second<<n, 5*time.Second) },
		hook: func(done int) {
			if done == workers*perWorker/3 && stopped.CompareAndSwap(false, true) {
				cluster.StopNode(3)
				t.Logf("stopped Cassandra node 3")
			}
		},
	})
	if !stopped.Load() {
		fatalProblemf(t, "the node was never stopped")
	}
	cluster.StartNode(3)
	t.Logf("started Cassandra node 3 again")
	checkTransferFault(t, "transfer-node-stopped", ops, servers[0], false)
}

// checkTransferFault compares the load's record with the wallets'
// histories and values, logs the fault's row and fails on any violation.
func checkTransferFault(t *testing.T, fault string, ops []*transferOp, reader *server, timeouts bool) {
	t.Helper()
	// A logged batch is atomic, not isolated: one that a killed server's
	// request left in Cassandra's batch log lands when the log is
	// replayed. So a transfer seen on one side only is looked at again,
	// for up to a minute, before it counts as a violation.
	var hist map[string]map[string][]int64
	for n := 0; ; n++ {
		hist = map[string]map[string][]int64{}
		for _, w := range transferWallets {
			hist[w] = ledgerHistory(t, reader, transferNS, w)
		}
		oneSided := 0
		for _, o := range ops {
			_, inFrom := hist[o.from][o.id]
			_, inTo := hist[o.to][o.id]
			if inFrom != inTo {
				oneSided++
			}
		}
		if oneSided == 0 || n == 12 {
			break
		}
		t.Logf("%s: %d transfers on one side only; looking again in 5 s", fault, oneSided)
		time.Sleep(5 * time.Second)
	}
	values := map[string]int64{}
	var sum int64
	for _, w := range transferWallets {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		v, err := readValue(ctx, reader, faultModel{ns: transferNS, kind: kindLedger}, w)
		cancel()
		if err != nil {
			fatalProblemf(t, "reading %s: %v", w, err)
		}
		values[w], sum = v, sum+v
		listed := int64(0)
		for id, amounts := range hist[w] {
			for _, a := range amounts {
				listed += a
			}
			if len(amounts) > 1 {
				problemf(t, "%s: %s lists request %s %d times: %v", fault, w, id, len(amounts), amounts)
			}
		}
		if v != listed {
			problemf(t, "%s: %s's value %d is not the sum of its history %d", fault, w, v, listed)
		}
		if v < 0 {
			problemf(t, "%s: %s went below its floor of 0: %d", fault, w, v)
		}
	}
	r := faultRow{fault: fault, model: "ledger-transfer", ops: len(ops), value: sum}
	refusedBy := map[string]int{}
	timedOut := 0
	for _, o := range ops {
		r.retries += o.retries
		for code, n := range o.refusals {
			refusedBy[code] += n
		}
		if o.unknowns > 0 {
			timedOut++
		}
		debit, inFrom := hist[o.from][o.id]
		credit, inTo := hist[o.to][o.id]
		switch {
		case inFrom != inTo:
			r.lost++
			problemf(t, "%s: transfer %s (%d from %s to %s) is in one wallet only: %s %v, %s %v", fault, o.id, o.amount, o.from, o.to, o.from, debit, o.to, credit)
		case inFrom && (debit[0] != -o.amount || credit[0] != o.amount):
			problemf(t, "%s: transfer %s of %d listed as %v and %v", fault, o.id, o.amount, debit, credit)
		}
		switch {
		case o.acked:
			r.acked++
			if !inFrom || !inTo {
				r.lost++
				problemf(t, "%s: transfer %s was acknowledged but is not in both histories", fault, o.id)
			}
		case o.unknowns > 0:
			r.unknown++
		default:
			r.failed++
			if inFrom || inTo {
				r.double++
				problemf(t, "%s: transfer %s was refused on every attempt, yet applied", fault, o.id)
			}
		}
	}
	r.drift = sum - int64(len(transferWallets))*transferSeed
	t.Logf("%s", formatRow(r))
	t.Logf("  %s: wallets %v, sum %d (put in %d); refusals by code %v; %d transfers had an attempt of unknown outcome",
		fault, values, sum, int64(len(transferWallets))*transferSeed, refusedBy, timedOut)
	if r.drift != 0 {
		problemf(t, "%s: the wallets sum to %d, not the %d put in: a transfer was applied on one side only", fault, sum, int64(len(transferWallets))*transferSeed)
	}
	if timeouts && timedOut == 0 {
		problemf(t, "%s: no attempt had an unknown outcome: the client-timeout fault was not injected", fault)
	}
	if refusedBy["below_floor"] == 0 {
		problemf(t, "%s: no transfer was refused by a floor; the load never reached one", fault)
	}
	reportMu.Lock()
	reportRows = append(reportRows, r)
	reportMu.Unlock()
}
