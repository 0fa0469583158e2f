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
	attempts
}

// runTransferLoad makes transfers between random wallets, each under its
// own request id. The first wallet only pays: it empties within its first
// dozen transfers, so the floor refuses some of every run's load, which a
// fair random walk among wallets this full does not promise (a run of
// 400 transfers once ended with none refused).
func runTransferLoad(cfg ledgerLoad) []*transferOp {
	return runLedgerLoad(cfg, func(rng *rand.Rand, w, i int) *transferOp {
		from := rng.IntN(len(transferWallets))
		// Any wallet but the payer and the first.
		to := 1 + rng.IntN(len(transferWallets)-1)
		for to == from {
			to = 1 + rng.IntN(len(transferWallets)-1)
		}
		o := &transferOp{id: fmt.Sprintf("t%d-%d", w, i), from: transferWallets[from], to: transferWallets[to], amount: 1 + rng.Int64N(60)}
		path := fmt.Sprintf("/v1/namespaces/%s/ledgers/%s/transfers", transferNS, o.from)
		o.sendRetrying(rng, cfg.alive, path, map[string]any{"to": o.to, "amount": o.amount, "request_id": o.id}, cfg.timeout)
		return o
	})
}

// Fault 6c. Ten servers, 20 clients, each making transfers between random
// wallets of floor 0 (amounts up to 60 against 200 in each, one wallet
// that only pays, so the floor refuses some); clients give up after a few milliseconds and retry the
// same request id on another server; a third of the way in, two servers
// are killed with SIGKILL.
func TestFaultLedgerTransfersTimeoutsAndKill(t *testing.T) {
	faultSuite(t)
	servers := startFaultServers(t, 10, cassandraArgs(t), nil, nil)
	startWallets(t, servers[0], transferNS, transferSeed, transferWallets...)
	const workers, perWorker = 20, 20
	kill := killTwo(servers)
	ops := runTransferLoad(ledgerLoad{
		alive: kill.alive, workers: workers, perWorker: perWorker,
		timeout: func(n int) time.Duration { return min(15*time.Millisecond<<n, 3*time.Second) },
		hook:    kill.at(t, workers*perWorker/3),
	})
	if !kill.done.Load() {
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
	startWallets(t, servers[0], transferNS, transferSeed, transferWallets...)
	const workers, perWorker = 20, 15
	node := &nodeStopped{cluster: cluster}
	ops := runTransferLoad(ledgerLoad{
		alive: func() []*server { return servers }, workers: workers, perWorker: perWorker,
		timeout: func(n int) time.Duration { return min(time.Second<<n, 5*time.Second) },
		hook:    node.at(t, workers*perWorker/3),
	})
	node.restart(t)
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
