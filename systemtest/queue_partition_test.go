package systemtest

// The partition suite's queue (docs/guarantees.md, "Across data centers"):
// producers put messages without a dedup id through every server while
// consumers receive and acknowledge through every server; after healing
// the queue is drained. A queue delivers at least once: every put that
// was acknowledged must have been handed out, and a put refused on its
// only attempt must never be. Deliveries beyond the first (a receipt whose
// ack was lost to the cut comes back after the visibility timeout) are
// counted, not failed.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/api"
)

// queuePut is one put of the queue load: one message, one attempt (a put
// without a dedup id that is sent again may be stored twice, which the
// checker could not tell from a redelivery).
type queuePut struct {
	body string
	try  attempt
}

// queueRun is what the queue load did.
type queueRun struct {
	queue string
	mu    sync.Mutex
	puts  []*queuePut
	// delivered counts the deliveries of each body, during the load and
	// the drain.
	delivered map[string]int
	// other holds the attempts of receives and acks, for the check that
	// none was answered 500.
	other []attempt
	// done is closed when the producer and the consumer have stopped.
	done chan struct{}
}

// runQueueLoad makes queue (4 shards, 5 s visibility) and drives it with
// one producer and one consumer until stop closes, each pausing pace
// between requests and sending each to a random server.
func runQueueLoad(t *testing.T, queue string, servers func() []*server, stop <-chan struct{}, pace, timeout time.Duration) *queueRun {
	t.Helper()
	create := fmt.Sprintf(`{"name":%q,"shards":4,"visibility_timeout":"5s","max_deliveries":100}`, queue)
	if a, body := postJSON(servers()[0].Base, "/v1/queues", json.RawMessage(create), 30*time.Second); a.out != acked {
		fatalProblemf(t, "creating queue %s: %v %s", queue, a.err, body)
	}
	q := &queueRun{queue: queue, delivered: map[string]int{}, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(1, 7))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(pace):
			}
			all := servers()
			s := all[rng.IntN(len(all))]
			p := &queuePut{body: fmt.Sprintf("%s-%d", queue, i)}
			start := time.Now()
			p.try, _ = postJSON(s.Base, "/v1/queues/"+queue+"/messages",
				api.PutRequest{Messages: []api.PutMessage{{Body: p.body}}}, timeout)
			p.try.server, p.try.start, p.try.end = s.Name, start, time.Now()
			q.mu.Lock()
			q.puts = append(q.puts, p)
			q.mu.Unlock()
		}
	})
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(2, 7))
		for {
			select {
			case <-stop:
				return
			case <-time.After(pace):
			}
			all := servers()
			q.receiveAndAck(all[rng.IntN(len(all))], all[rng.IntN(len(all))], timeout)
		}
	})
	go func() { wg.Wait(); close(q.done) }()
	return q
}

// receiveAndAck receives up to 10 messages through one server and
// acknowledges them through another, and says how many it received.
func (q *queueRun) receiveAndAck(from, ackVia *server, timeout time.Duration) int {
	start := time.Now()
	a, body := postJSON(from.Base, "/v1/queues/"+q.queue+"/receive", api.ReceiveRequest{Max: 10}, timeout)
	a.server, a.start, a.end = from.Name, start, time.Now()
	q.mu.Lock()
	q.other = append(q.other, a)
	q.mu.Unlock()
	if a.out != acked {
		return 0
	}
	var got api.ReceiveResponse
	if err := json.Unmarshal(body, &got); err != nil || len(got.Messages) == 0 {
		return 0
	}
	receipts := make([]string, len(got.Messages))
	q.mu.Lock()
	for i, m := range got.Messages {
		q.delivered[m.Body]++
		receipts[i] = m.Receipt
	}
	q.mu.Unlock()
	start = time.Now()
	a, _ = postJSON(ackVia.Base, "/v1/queues/"+q.queue+"/ack", api.AckRequest{Receipts: receipts}, timeout)
	a.server, a.start, a.end = ackVia.Name, start, time.Now()
	q.mu.Lock()
	q.other = append(q.other, a)
	q.mu.Unlock()
	return len(got.Messages)
}

// drain receives through every server in turn until every acknowledged
// put has been delivered and the queue has been empty for longer than the
// visibility timeout, or until three minutes have passed.
func (q *queueRun) drain(servers []*server) {
	deadline := time.Now().Add(3 * time.Minute)
	var emptySince time.Time
	for i := 0; time.Now().Before(deadline); i++ {
		s := servers[i%len(servers)]
		if q.receiveAndAck(s, s, 10*time.Second) > 0 {
			emptySince = time.Time{}
			continue
		}
		if emptySince.IsZero() {
			emptySince = time.Now()
		}
		if q.missing() == 0 && time.Since(emptySince) > 6*time.Second {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// missing counts the acknowledged puts not delivered yet.
func (q *queueRun) missing() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, p := range q.puts {
		if p.try.out == acked && q.delivered[p.body] == 0 {
			n++
		}
	}
	return n
}

// check compares the puts with the deliveries, fails the test on a lost
// or phantom message, and returns the queue's row: lost counts
// acknowledged puts never delivered, double the puts refused yet
// delivered.
func (q *queueRun) check(t *testing.T, fault string) faultRow {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	r := faultRow{fault: fault, model: "queue", ops: len(q.puts)}
	redelivered := 0
	for _, p := range q.puts {
		n := q.delivered[p.body]
		if n > 1 {
			redelivered += n - 1
		}
		switch p.try.out {
		case acked:
			r.acked++
			if n == 0 {
				r.lost++
				problemf(t, "%s: queue: the put of %s was acknowledged but never delivered", fault, p.body)
			}
		case unknown:
			r.unknown++
		default:
			r.failed++
			if n > 0 {
				r.double++
				problemf(t, "%s: queue: the put of %s was refused, yet delivered %d times", fault, p.body, n)
			}
		}
	}
	t.Logf("  %s: queue: %d puts, %d deliveries of them beyond the first (acks lost to the fault come back after the visibility timeout)",
		fault, len(q.puts), redelivered)
	return r
}

// tries lists every attempt of the load, puts first.
func (q *queueRun) tries() [][]attempt {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([][]attempt, 0, len(q.puts)+1)
	for _, p := range q.puts {
		out = append(out, []attempt{p.try})
	}
	return append(out, q.other)
}

// putTries lists the attempts of the puts.
func (q *queueRun) putTries() [][]attempt {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([][]attempt, len(q.puts))
	for i, p := range q.puts {
		out[i] = []attempt{p.try}
	}
	return out
}
