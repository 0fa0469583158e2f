package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
)

// gatedDeletes is a real store whose deletes wait at a gate, counted, and
// fail with err while it is set.
type gatedDeletes struct {
	driver.Queues
	calls atomic.Int64
	keys  atomic.Int64
	mixed atomic.Bool   // a delete carried keys of more than one shard
	gate  chan struct{} // each delete takes one token; nil: no gate
	err   error
	// failShard, when set, limits err to the deletes of that shard + 1.
	failShard int
}

func (s *gatedDeletes) DeleteMessages(ctx context.Context, p *driver.DeleteMessagesParams) error {
	s.calls.Add(1)
	s.keys.Add(int64(len(p.Keys)))
	for _, k := range p.Keys {
		if k.Shard != p.Keys[0].Shard {
			s.mixed.Store(true)
		}
	}
	if s.gate != nil {
		<-s.gate
	}
	if s.err != nil && (s.failShard == 0 || s.failShard == p.Keys[0].Shard+1) {
		return s.err
	}
	return s.Queues.DeleteMessages(ctx, p)
}

// gatedEnv returns a service on a gated embedded store, a queue with n
// delivered messages, and their deliveries.
func gatedEnv(t *testing.T, store *gatedDeletes, n int) (*Service, *Queue, []*Delivery) {
	return gatedSpreadEnv(t, store, n, 1)
}

// gatedSpreadEnv is gatedEnv with a queue of 4·spread shards spread over
// spread a window, its messages put one batch of 5 at a time.
func gatedSpreadEnv(t *testing.T, store *gatedDeletes, n, spread int) (*Service, *Queue, []*Delivery) {
	t.Helper()
	store.Queues = embeddedStore(t)
	clk := clock.NewManual(start)
	svc, err := New(Config{Store: store, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	q, err := svc.Create(ctxT(t), QueueConfig{Name: "acks", Shards: 4 * spread, Spread: spread})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 5 {
		if _, err := svc.PutBatch(ctxT(t), q.Name, make([]Message, min(5, n-i))); err != nil {
			t.Fatal(err)
		}
	}
	c, err := svc.NewConsumer(ctxT(t), ConsumerConfig{Queue: q.Name, BatchSize: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	var ds []*Delivery
	for range 4 * spread { // a shard at a time
		if len(ds) < n {
			ds = append(ds, receive(t, c, n-len(ds))...)
		}
	}
	if len(ds) != n {
		t.Fatalf("received %d of %d", len(ds), n)
	}
	return svc, q, ds
}

// ackAll acknowledges every delivery at once and returns each answer.
func ackAll(ctx context.Context, ds []*Delivery) []error {
	errs := make([]error, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() { errs[i] = d.Ack(ctx) })
	}
	wg.Wait()
	return errs
}

// Acks that arrive while a delete is being written share the next one: a
// hundred concurrent acks take a few writes, not a hundred, and every
// message is gone when they return.
func TestConcurrentAcksShareWrites(t *testing.T) {
	t.Parallel()
	const n = 100
	store := &gatedDeletes{gate: make(chan struct{})}
	svc, q, ds := gatedEnv(t, store, n)
	done := make(chan []error)
	go func() { done <- ackAll(ctxT(t), ds) }()
	// Hold the first write until every ack has joined a group.
	for store.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// Wait until every ack is in a write or pending, not a fixed 50 ms: on a loaded machine late acks each took a write.
	for store.keys.Load()+int64(pendingAcks(svc)) < n {
		time.Sleep(time.Millisecond)
	}
	close(store.gate)
	for i, err := range <-done {
		if err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
	}
	if c := store.calls.Load(); c > 3 {
		t.Errorf("%d concurrent acks took %d deletes; they should share writes", n, c)
	}
	if k := store.keys.Load(); k != n {
		t.Errorf("the deletes carried %d keys, want %d", k, n)
	}
	wantAllAcked(t, svc, q, n)
}

// pendingAcks counts the acks waiting in svc's groups for their write.
func pendingAcks(svc *Service) int {
	svc.acks.mu.Lock()
	defer svc.acks.mu.Unlock()
	n := 0
	for _, g := range svc.acks.shards {
		n += len(g.pending)
	}
	return n
}

// Each group write holds one shard's acks, so that it is one partition's
// batch (applied whole or not at all); a spread queue's shards are written
// side by side.
func TestAckGroupsHoldOneShardEach(t *testing.T) {
	t.Parallel()
	const n = 200
	store := &gatedDeletes{}
	svc, q, ds := gatedSpreadEnv(t, store, n, 4)
	shards := map[int]bool{}
	for _, d := range ds {
		shards[d.Shard()] = true
	}
	if len(shards) < 2 {
		t.Fatalf("200 messages in 40 batches landed in shards %v: nothing to test", shards)
	}
	for i, err := range ackAll(ctxT(t), ds) {
		if err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
	}
	if store.mixed.Load() {
		t.Error("a group write carried the acks of more than one shard")
	}
	if c := store.calls.Load(); c < int64(len(shards)) {
		t.Errorf("%d writes for acks in %d shards", c, len(shards))
	}
	if o, err := svc.Observe(ctxT(t), q.Name); err != nil || o.Messages != 0 {
		t.Fatalf("after the acks: %+v, %v; want no message left", o, err)
	}
}

// An ack is answered with the result of the write that carried it: a
// failed write fails every ack of its group, and nothing is deleted.
func TestAFailedGroupWriteFailsEveryAck(t *testing.T) {
	t.Parallel()
	boom := errors.New("test store: delete failed")
	store := &gatedDeletes{err: boom}
	svc, q, ds := gatedEnv(t, store, 20)
	for i, err := range ackAll(ctxT(t), ds) {
		if !errors.Is(err, boom) {
			t.Fatalf("ack %d = %v, want the write's error", i, err)
		}
	}
	if o, err := svc.Observe(ctxT(t), q.Name); err != nil || o.Messages != 20 {
		t.Fatalf("after failed acks: %+v, %v; want all 20 messages kept", o, err)
	}
	if got := svc.Stats().Acked.Load(); got != 0 {
		t.Errorf("Stats().Acked = %d after failed acks", got)
	}
}

// A caller that gives up before its group is written is told the outcome
// is unknown (the delete may still land), and the write goes on for the
// others: it is not cut short by that caller's context.
func TestAnAckThatGivesUpIsOfUnknownOutcome(t *testing.T) {
	t.Parallel()
	store := &gatedDeletes{gate: make(chan struct{})}
	svc, q, ds := gatedEnv(t, store, 2)
	short, cancel := context.WithCancel(context.Background())
	first := make(chan error)
	go func() { first <- ds[0].Ack(short) }()
	for store.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-first; !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, context.Canceled) {
		t.Fatalf("an ack whose caller gave up = %v; want ErrUnknownOutcome wrapping the cancellation", err)
	}
	close(store.gate)
	if err := ds[1].Ack(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// The abandoned ack's write went on.
	if o, err := svc.Observe(ctxT(t), q.Name); err != nil || o.Messages != 0 {
		t.Fatalf("after the acks: %+v, %v; want both messages deleted", o, err)
	}
}

func receiptsOf(ds []*Delivery) []string {
	rs := make([]string, len(ds))
	for i, d := range ds {
		rs[i] = d.Receipt()
	}
	return rs
}

// AckAll submits every receipt's delete before waiting for any, so the
// receipts of one shard take one write, not one write each in turn.
func TestAckAllTakesOneWritePerShard(t *testing.T) {
	t.Parallel()
	const n = 100
	store := &gatedDeletes{}
	svc, q, ds := gatedSpreadEnv(t, store, n, 4)
	shards := map[int]bool{}
	for _, d := range ds {
		shards[d.Shard()] = true
	}
	if len(shards) < 2 {
		t.Fatalf("%d messages landed in shards %v: nothing to test", n, shards)
	}
	got, err := svc.AckAll(ctxT(t), q.Name, receiptsOf(ds))
	if err != nil || got != n {
		t.Fatalf("AckAll: %d, %v; want %d, nil", got, err, n)
	}
	if c := store.calls.Load(); c != int64(len(shards)) {
		t.Errorf("%d receipts in %d shards took %d deletes, want one per shard", n, len(shards), c)
	}
	wantAllAcked(t, svc, q, n)
}

// A receipt that does not parse refuses the whole call before anything
// is deleted.
func TestAckAllWithABadReceiptAcknowledgesNothing(t *testing.T) {
	t.Parallel()
	store := &gatedDeletes{}
	svc, q, ds := gatedEnv(t, store, 5)
	rs := receiptsOf(ds)
	rs[3] = "not-a-receipt"
	got, err := svc.AckAll(ctxT(t), q.Name, rs)
	if !errors.Is(err, ErrInvalid) || got != 0 || !strings.Contains(err.Error(), "receipts[3]") {
		t.Fatalf("AckAll with receipts[3] garbage: %d, %v; want 0 and ErrInvalid naming receipts[3]", got, err)
	}
	if c := store.calls.Load(); c != 0 {
		t.Errorf("%d deletes were written", c)
	}
	if o, err := svc.Observe(ctxT(t), q.Name); err != nil || o.Messages != 5 {
		t.Fatalf("after the refused AckAll: %+v, %v; want all 5 messages kept", o, err)
	}
}

// When one shard's write fails, the other shards' receipts are still
// acknowledged, and the error counts them and names the others.
func TestAckAllNamesTheReceiptsItCouldNotAcknowledge(t *testing.T) {
	t.Parallel()
	const n = 40
	boom := errors.New("boom")
	store := &gatedDeletes{}
	svc, q, ds := gatedSpreadEnv(t, store, n, 4)
	bad := ds[0].Shard()
	var want []int
	for i, d := range ds {
		if d.Shard() == bad {
			want = append(want, i)
		}
	}
	store.err, store.failShard = boom, bad+1
	got, err := svc.AckAll(ctxT(t), q.Name, receiptsOf(ds))
	if !errors.Is(err, boom) || got != n-len(want) {
		t.Fatalf("AckAll with shard %d failing: %d, %v; want %d and the store's error", bad, got, err, n-len(want))
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("not receipts%v", want)) {
		t.Errorf("error %q does not name receipts %v", err, want)
	}
	if o, err := svc.Observe(ctxT(t), q.Name); err != nil || o.Messages != len(want) {
		t.Fatalf("after AckAll: %+v, %v; want the %d messages of shard %d left", o, err, len(want), bad)
	}
}

// wantAllAcked fails the test unless q holds no message and the service
// counted n acknowledgements.
func wantAllAcked(t *testing.T, svc *Service, q *Queue, n int) {
	t.Helper()
	if o, err := svc.Observe(ctxT(t), q.Name); err != nil || o.Messages != 0 {
		t.Fatalf("after the acks: %+v, %v; want no message left", o, err)
	}
	if got := svc.Stats().Acked.Load(); got != int64(n) {
		t.Errorf("Stats().Acked = %d, want %d", got, n)
	}
}
