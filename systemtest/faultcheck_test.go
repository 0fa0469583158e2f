package systemtest

// The fault suite's one checker. Every fault test drives the same load
// generator over a set of models, records what happened to every operation
// (acknowledged, definitely failed, unknown outcome, and how often it was
// retried), and at the end compares each counter's final value with what
// the record allows:
//
//	lower bound = the effects of acknowledged operations
//	upper bound = lower bound + the effects of unknown outcomes
//
// A value below the lower bound means acknowledged effects were lost; a
// value above the upper bound means something was applied more often than
// the client could have caused it to be (double-applied). How an unknown
// outcome widens the upper bound depends on what a retry means in the
// model: for the models where a retry with the same request id (or, for
// actor, the same version) is the same effect, an operation contributes
// once however many of its attempts timed out; for native and cas, which
// ignore request ids, every attempt without an answer is one more effect
// that may have landed.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/internal/servertest"
)

type modelKind int

const (
	kindCounter modelKind = iota // POST .../counters/{c}/updates {delta, request_id}
	kindActor                    // POST .../counters/{c}/actors/{a} {version, value}
	kindLedger                   // POST .../ledgers/{l}/credits {amount, request_id}
)

// faultModel is one namespace under load.
type faultModel struct {
	name string // the model, as printed in the table
	ns   string
	// create is the body of POST /v1/namespaces.
	create string
	kind   modelKind
	// idempotent: a retry carrying the same request id (actor: the same
	// version) is the same effect, not a new one.
	idempotent bool
	// retrySameServer sends retries of an unknown outcome to the server
	// that had the first attempt: the sharded model de-duplicates request
	// ids per process only, so that is the scope of its promise.
	retrySameServer bool
	// reportOnly prints what the checker finds of this model (lost,
	// double-applied, readers that disagree) without failing: a baseline
	// measured for comparison, whose faults are Cassandra's, not Abacus'
	// (native counters across data centers; docs/faults.md, "Partitions").
	reportOnly bool
}

// eventsOptions are the events namespace's windows, in seconds. Tests use
// short ones so that rollups have something to fold within a test.
type eventsOptions struct{ bucket, accept, delay, future int }

// faultModels returns the six models. The ledger namespace is in the exact
// mode (the default) when asked, else in the opt-in mode without claims:
// only the exact mode makes a retry that races its still-running original
// on another server count once (docs/ledger.md), and the faults that send
// no such retries cover the cheaper mode too.
func faultModels(ev eventsOptions, exactLedger bool) []faultModel {
	ledgerMode := "concurrent_retries_may_double"
	if exactLedger {
		ledgerMode = "exact"
	}
	return []faultModel{
		{name: "sharded", ns: "sh", create: `{"name":"sh","model":"sharded"}`, idempotent: true, retrySameServer: true},
		{name: "events", ns: "ev", create: fmt.Sprintf(`{"name":"ev","model":"events","events":{"bucket_seconds":%d,"accept_window_seconds":%d,"rollup_delay_seconds":%d,"future_limit_seconds":%d}}`, ev.bucket, ev.accept, ev.delay, ev.future), idempotent: true},
		{name: "actor", ns: "act", create: `{"name":"act","model":"actor"}`, kind: kindActor, idempotent: true},
		{name: "ledger", ns: "led", create: fmt.Sprintf(`{"name":"led","model":"ledger","ledger":{"history_length":100,"mode":%q}}`, ledgerMode), kind: kindLedger, idempotent: true},
		{name: "native", ns: "nat", create: `{"name":"nat","model":"native"}`},
		{name: "cas", ns: "cas", create: `{"name":"cas","model":"cas"}`},
	}
}

// only keeps the named models.
func only(models []faultModel, names ...string) []faultModel {
	var out []faultModel
	for _, m := range models {
		for _, n := range names {
			if m.name == n {
				out = append(out, m)
			}
		}
	}
	return out
}

func createModels(t *testing.T, s *server, models []faultModel) {
	t.Helper()
	for _, m := range models {
		createNamespace(t, s, m.create)
	}
}

// faultClient carries the fault tests' requests. Its transport keeps enough
// idle connections for every worker, so connection set-up does not dominate
// the very short timeouts of the client-timeout fault. Timeouts are set per
// request through contexts.
var faultClient = &http.Client{Transport: &http.Transport{
	MaxIdleConns:        256,
	MaxIdleConnsPerHost: 64,
	IdleConnTimeout:     30 * time.Second,
}}

// attempt is what one HTTP request did.
type attempt struct {
	out     outcome
	timeout bool   // the client gave up waiting; the server may go on
	code    string // the error code of a non-2xx answer
	err     error

	// Where and when, for the history of a run (runFaultLoad sets them).
	server     string
	start, end time.Time
}

// postJSON sends one POST with its own timeout and classifies the answer:
// 200 acknowledged; a connection that was never made, a 4xx, not_applied
// and unavailable definitely changed nothing (docs/guarantees.md); anything
// else (a timeout, a broken connection, unknown_outcome, a 500) may have.
func postJSON(base, path string, body any, timeout time.Duration) (attempt, []byte) {
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := faultClient.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return attempt{out: failed, err: err}, nil
		}
		return attempt{out: unknown, timeout: errors.Is(err, context.DeadlineExceeded), err: err}, nil
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(resp.Body)
	if err != nil {
		return attempt{out: unknown, timeout: errors.Is(err, context.DeadlineExceeded), err: err}, nil
	}
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated {
		return attempt{out: acked}, msg
	}
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(msg, &e)
	a := attempt{code: e.Code, err: fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))}
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		a.out = failed
	case e.Code == "not_applied" || e.Code == "unavailable":
		a.out = failed
	default:
		a.out = unknown
	}
	return a, msg
}

// op is one logical operation: one request id (actor: one version), sent
// once or retried.
type op struct {
	counter string
	actor   string // actor model: the actor (one per worker)
	amount  int64  // delta/amount; actor: the version, equal to the value
	id      string

	acked    bool
	attempts []attempt // every attempt, in order: the operation's history
	unknowns int       // attempts whose outcome is unknown
	timeouts int       // of those, client-side timeouts
	retries  int       // attempts after the first
	refused  int       // attempts that definitely changed nothing
}

// faultLedger records every operation, per model.
type faultLedger struct {
	mu  sync.Mutex
	ops map[string][]*op // by model name
	// errs keeps the first few errors per model for the test log.
	errs map[string][]string
	// retriedAfterTimeout counts, per model, operations retried after a
	// client-side timeout.
	retriedAfterTimeout map[string]int
	// refusedWith counts definite refusals per model and error code.
	refusedWith map[string]map[string]int
}

func newFaultLedger() *faultLedger {
	return &faultLedger{ops: map[string][]*op{}, errs: map[string][]string{}, retriedAfterTimeout: map[string]int{}, refusedWith: map[string]map[string]int{}}
}

func (l *faultLedger) record(model string, o *op, errs []attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o.attempts = errs
	l.ops[model] = append(l.ops[model], o)
	if o.timeouts > 0 && o.retries > 0 {
		l.retriedAfterTimeout[model]++
	}
	for _, a := range errs {
		if a.out == failed {
			if l.refusedWith[model] == nil {
				l.refusedWith[model] = map[string]int{}
			}
			code := a.code
			if code == "" {
				code = "no connection"
			}
			l.refusedWith[model][code]++
		}
		if a.err != nil && len(l.errs[model]) < 3 {
			l.errs[model] = append(l.errs[model], a.err.Error())
		}
	}
}

// refusals returns how many attempts of a model were refused with code.
func (l *faultLedger) refusals(model, code string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refusedWith[model][code]
}

// loadConfig describes one run of the load generator.
type loadConfig struct {
	servers func() []*server // where to send; may shrink (a killed server)
	models  []faultModel
	ops     int // per model
	// opsOf overrides ops for some models (the slow lightweight-transaction
	// ones), keeping the suite short.
	opsOf    map[string]int
	workers  int // per model
	counters int // per model
	// timeout gives the client timeout of the n-th attempt (0-based) of an
	// operation. Default: 20 s for every attempt.
	timeout func(n int) time.Duration
	// retryUnknown retries an unknown outcome with the same request id
	// until it is acknowledged (at most maxAttempts attempts). Without it an
	// unknown outcome is recorded as such and the worker moves on.
	retryUnknown bool
	maxAttempts  int
	// hooks run once, in the worker that starts the at-th operation (over
	// all models): the fault injected mid-load.
	hooks []loadHook
	// stop, when not nil, makes the load run until it is closed instead
	// of for ops operations (an operation under way is finished).
	stop <-chan struct{}
	// pace is a worker's pause between two operations, for a load that
	// runs for a time on a small machine.
	pace time.Duration
}

type loadHook struct {
	at int
	do func()
}

// runFaultLoad sends cfg.ops operations per model, all models at once, and
// records every outcome. An attempt that definitely changed nothing (no
// connection, a refusal) is resent, with the same request id, to another
// server: that is what a client does, and it cannot double anything.
func runFaultLoad(t *testing.T, cfg loadConfig) *faultLedger {
	t.Helper()
	if cfg.timeout == nil {
		cfg.timeout = func(int) time.Duration { return 20 * time.Second }
	}
	if cfg.maxAttempts == 0 {
		cfg.maxAttempts = 12
	}
	l := newFaultLedger()
	var started atomic.Int64
	hookDone := make([]sync.Once, len(cfg.hooks))
	var wg sync.WaitGroup
	for _, m := range cfg.models {
		var next atomic.Int64
		ops := cfg.ops
		if n, ok := cfg.opsOf[m.name]; ok {
			ops = n
		}
		for w := range cfg.workers {
			wg.Go(func() {
				version := int64(0) // actor: this worker's running count
				for {
					i := int(next.Add(1))
					if cfg.stop == nil && i > ops {
						return
					}
					if cfg.stop != nil {
						select {
						case <-cfg.stop:
							return
						case <-time.After(cfg.pace):
						}
					}
					n := int(started.Add(1))
					for h, hook := range cfg.hooks {
						if n == hook.at {
							hookDone[h].Do(hook.do)
						}
					}
					o := &op{counter: fmt.Sprintf("c%d", (i+w)%cfg.counters), amount: 1, id: abacus.NewRequestID()}
					if m.kind == kindActor {
						// One actor per worker, on a fixed counter, setting
						// its running count at that version.
						version++
						o.counter = fmt.Sprintf("c%d", w%cfg.counters)
						o.actor = fmt.Sprintf("w%d", w)
						o.amount = version
					}
					// A random first server: a fixed pattern could pair a
					// model's workers with one server only.
					first := rand.IntN(1 << 20)
					var attempts []attempt
					var pinned *server // sharded: the server of the unknown outcome
					for n := 0; n < cfg.maxAttempts; n++ {
						servers := cfg.servers()
						target := servers[(first+n)%len(servers)]
						if pinned != nil {
							target = pinned
						}
						if n > 0 {
							o.retries++
						}
						began := time.Now()
						a := send(target, m, o, cfg.timeout(n))
						a.server, a.start, a.end = target.Name, began, time.Now()
						attempts = append(attempts, a)
						if a.out == acked {
							o.acked = true
							break
						}
						if a.out == unknown {
							o.unknowns++
							if a.timeout {
								o.timeouts++
							}
							if m.retrySameServer {
								pinned = target
							}
							if !cfg.retryUnknown {
								break
							}
							continue
						}
						o.refused++
						if !resendable(a) {
							break // a caller mistake or too_late: sending again changes nothing
						}
						// Definitely not applied: resend after a short pause
						// (to another server, as the index moves on).
						time.Sleep(50 * time.Millisecond)
					}
					l.record(m.name, o, attempts)
				}
			})
		}
	}
	wg.Wait()
	return l
}

// resendable tells whether a definite failure is one a client sends again:
// no connection, not_applied, unavailable.
func resendable(a attempt) bool {
	return a.code == "" || a.code == "not_applied" || a.code == "unavailable"
}

// send makes one attempt of o on s.
func send(s *server, m faultModel, o *op, timeout time.Duration) attempt {
	ns, c := url.PathEscape(m.ns), url.PathEscape(o.counter)
	switch m.kind {
	case kindActor:
		a, _ := postJSON(s.Base, fmt.Sprintf("/v1/namespaces/%s/counters/%s/actors/%s", ns, c, url.PathEscape(o.actor)),
			map[string]any{"version": o.amount, "value": o.amount}, timeout)
		return a
	case kindLedger:
		a, _ := postJSON(s.Base, fmt.Sprintf("/v1/namespaces/%s/ledgers/%s/credits", ns, c),
			map[string]any{"amount": o.amount, "request_id": o.id}, timeout)
		return a
	default:
		a, _ := postJSON(s.Base, fmt.Sprintf("/v1/namespaces/%s/counters/%s/updates", ns, c),
			map[string]any{"delta": o.amount, "request_id": o.id}, timeout)
		return a
	}
}

// readValue reads one counter (or ledger) of a model through s.
func readValue(ctx context.Context, s *server, m faultModel, counter string) (int64, error) {
	path := fmt.Sprintf("/v1/namespaces/%s/counters/%s", url.PathEscape(m.ns), url.PathEscape(counter))
	if m.kind == kindLedger {
		path = fmt.Sprintf("/v1/namespaces/%s/ledgers/%s", url.PathEscape(m.ns), url.PathEscape(counter))
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Base+path, nil)
	resp, err := faultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: HTTP %d: %s", path, resp.StatusCode, bytes.TrimSpace(body))
	}
	var v struct {
		Value int64 `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return 0, err
	}
	return v.Value, nil
}

// bounds returns, per counter, the lowest value the record allows (every
// acknowledged effect) and the highest (plus every unknown one).
func bounds(m faultModel, ops []*op) (lo, hi map[string]int64) {
	lo, hi = map[string]int64{}, map[string]int64{}
	if m.kind == kindActor {
		// An actor's value is its highest version that landed: at least
		// its last acknowledged one, at most its last one that may have
		// landed.
		type key struct{ c, a string }
		ackedV, maybeV := map[key]int64{}, map[key]int64{}
		for _, o := range ops {
			k := key{o.counter, o.actor}
			if o.acked {
				ackedV[k] = max(ackedV[k], o.amount)
			}
			if o.acked || o.unknowns > 0 {
				maybeV[k] = max(maybeV[k], o.amount)
			}
		}
		for k, v := range ackedV {
			lo[k.c] += v
		}
		for k, v := range maybeV {
			hi[k.c] += v
		}
		return lo, hi
	}
	for _, o := range ops {
		if o.acked {
			lo[o.counter] += o.amount
			hi[o.counter] += o.amount
		}
		switch {
		case !m.idempotent:
			// Every unanswered attempt may have added once more.
			hi[o.counter] += o.amount * int64(o.unknowns)
		case !o.acked && o.unknowns > 0:
			hi[o.counter] += o.amount
		}
	}
	return lo, hi
}

// faultRow is one line of the fault suite's table.
type faultRow struct {
	fault, model string
	ops          int   // operations (request ids; actor: sets)
	acked        int   // acknowledged
	unknown      int   // effects of unknown outcome that may have landed
	failed       int   // never acknowledged, definitely not applied
	retries      int   // attempts after the first
	value        int64 // sum of the final values over the model's counters
	lost         int64 // acknowledged effects missing from the final values
	double       int64 // effects beyond acknowledged + unknown
	drift        int64 // final value − acknowledged effects
}

var (
	reportMu   sync.Mutex
	reportRows []faultRow
	// reportProblems repeats every failure of a fault test after the
	// table: on failure each server's log tail is printed after the
	// test's own messages, and CI shows only the end of the output.
	reportProblems []string
	// reportBaselines repeats what baselinef logged.
	reportBaselines []string
)

// problemf fails the test, saying why, and keeps the reason for the
// summary at the end of the run.
func problemf(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Error(keep(&reportProblems, t, format, args...))
}

// baselinef logs what a baseline model (faultModel.reportOnly) did that
// an Abacus model must not, and keeps it for the summary, without failing.
func baselinef(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Log("baseline, not asserted: " + keep(&reportBaselines, t, format, args...))
}

// keep formats a finding and appends it, named by its test, to list.
func keep(list *[]string, t testing.TB, format string, args ...any) string {
	msg := fmt.Sprintf(format, args...)
	reportMu.Lock()
	*list = append(*list, t.Name()+": "+msg)
	reportMu.Unlock()
	return msg
}

// reporterFor is how the checker reports what model m must not do: a
// failure, or for a baseline a note.
func reporterFor(m faultModel) func(testing.TB, string, ...any) {
	if m.reportOnly {
		return baselinef
	}
	return problemf
}

// fatalProblemf is problemf that stops the test.
func fatalProblemf(t testing.TB, format string, args ...any) {
	t.Helper()
	problemf(t, format, args...)
	t.FailNow()
}

// checkFault reads every counter of every model through every reader,
// compares the values with the record, prints the table lines, fails the
// test on any lost or double-applied effect (or readers that disagree), and
// returns the rows.
func checkFault(t *testing.T, fault string, l *faultLedger, cfg loadConfig, readers ...*server) map[string]faultRow {
	t.Helper()
	// Room for settledValue's wait on every counter of every model.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rows := map[string]faultRow{}
	for _, m := range cfg.models {
		ops := l.ops[m.name]
		lo, hi := bounds(m, ops)
		r := faultRow{fault: fault, model: m.name, ops: len(ops)}
		for _, o := range ops {
			r.retries += o.retries
			switch {
			case o.acked:
				r.acked++
			case o.unknowns == 0:
				r.failed++
			}
		}
		for c := range cfg.counters {
			name := fmt.Sprintf("c%d", c)
			r.unknown += int(hi[name] - lo[name])
			first := settledValue(t, ctx, fault, m, name, readers)
			r.value += first
			r.drift += first - lo[name]
			if first < lo[name] {
				r.lost += lo[name] - first
			}
			if first > hi[name] {
				r.double += first - hi[name]
			}
		}
		if m.kind == kindActor {
			// For actor, unknown is counted in value units above; show
			// operations here like every other model does.
			r.unknown = 0
			for _, o := range ops {
				if !o.acked && o.unknowns > 0 {
					r.unknown++
				}
			}
		}
		rows[m.name] = r
		t.Logf("%s", formatRow(r))
		if len(l.errs[m.name]) > 0 {
			t.Logf("  %s: first errors: %s", m.name, strings.Join(l.errs[m.name], " | "))
		}
		report := reporterFor(m)
		if r.lost != 0 {
			report(t, "%s: %s lost %d acknowledged effects", fault, m.name, r.lost)
		}
		if r.double != 0 {
			report(t, "%s: %s double-applied %d effects (beyond acknowledged + unknown)", fault, m.name, r.double)
		}
	}
	reportMu.Lock()
	for _, m := range cfg.models {
		reportRows = append(reportRows, rows[m.name])
	}
	reportMu.Unlock()
	return rows
}

// settledValue reads one counter through every reader until all of them
// agree. A write whose caller gave up goes on inside the server, so it can
// land between two readers' reads; a disagreement that outlasts
// readerAgreement is a fault of the readers and fails the test.
func settledValue(t *testing.T, ctx context.Context, fault string, m faultModel, name string, readers []*server) int64 {
	t.Helper()
	deadline := time.Now().Add(readerAgreement)
	for round := 1; ; round++ {
		values := make([]int64, len(readers))
		agree := true
		for i, s := range readers {
			v, err := readValue(ctx, s, m, name)
			if err != nil {
				fatalProblemf(t, "%s: read %s/%s through %s: %v", fault, m.ns, name, s.Name, err)
			}
			values[i] = v
			agree = agree && v == values[0]
		}
		if agree {
			if round > 1 {
				t.Logf("%s: %s %s: the readers agreed on round %d", fault, m.name, name, round)
			}
			return values[0]
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range readers {
				names = append(names, s.Name)
			}
			reporterFor(m)(t, "%s: %s %s still reads %v through %v after %v", fault, m.name, name, values, names, readerAgreement)
			return values[0]
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// readerAgreement bounds how long settledValue waits for writes still under
// way in a server (a ledger batch carries on for up to its write timeout).
const readerAgreement = 10 * time.Second

const tableHeader = "fault                 model     ops  acked  unknown  failed  retries   value  lost  double  drift"

func formatRow(r faultRow) string {
	return fmt.Sprintf("%-21s %-8s %4d  %5d  %7d  %6d  %7d  %6d  %4d  %6d  %+5d",
		r.fault, r.model, r.ops, r.acked, r.unknown, r.failed, r.retries, r.value, r.lost, r.double, r.drift)
}

// TestMain prints every fault test's table lines together at the end, in
// the order the tests ran (run with -v, as make test-faults does, to see
// them).
func TestMain(m *testing.M) {
	code := servertest.Main(m)
	reportMu.Lock()
	rows := append([]faultRow(nil), reportRows...)
	problems := append([]string(nil), reportProblems...)
	partitions := append([]partitionRow(nil), partitionRows...)
	baselines := append([]string(nil), reportBaselines...)
	reportMu.Unlock()
	if len(baselines) > 0 {
		fmt.Println("\n== baselines (reported, not asserted): what Cassandra's own mechanisms did")
		for _, b := range baselines {
			fmt.Println(b)
		}
	}
	if len(partitions) > 0 {
		fmt.Println("\n== partition suite: per nemesis and model (lost and double must be 0; converged = after healing, until every server read the same)")
		fmt.Println(partitionHeader)
		for _, r := range partitions {
			fmt.Println(formatPartitionRow(r))
		}
	}
	if len(rows) > 0 {
		fmt.Println("\n== fault suite: per fault and model (lost and double must be 0; drift = value − acknowledged)")
		fmt.Println(tableHeader)
		for _, r := range rows {
			fmt.Println(formatRow(r))
		}
	}
	if len(problems) > 0 {
		fmt.Println("\n== fault suite: what failed")
		for _, p := range problems {
			fmt.Println(p)
		}
	}
	os.Exit(code)
}
