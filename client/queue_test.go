package client_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/internal/servertest"
)

// queueBackend is a real server whose library client runs on a manual clock.
func queueBackend(t *testing.T) (*client.Client, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC))
	b := servertest.NewBackend(t, clk)
	ts := httptest.NewServer(b.Handler)
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL, client.WithRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	return c, clk
}

func TestQueueRoundTrip(t *testing.T) {
	t.Parallel()
	c, clk := queueBackend(t)
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, api.CreateQueueRequest{Name: "mail/outbox"}); !client.IsCode(err, api.CodeInvalidArgument) {
		t.Fatalf("a queue name outside the safe set: %v", err)
	}
	q, err := c.CreateQueue(ctx, api.CreateQueueRequest{Name: "mail.outbox", Shards: 4, MaxDeliveries: 2, VisibilityTimeout: "5s"})
	if err != nil || q.Name != "mail.outbox" || q.Shards != 4 {
		t.Fatalf("CreateQueue = %+v, %v", q, err)
	}
	if _, err := c.CreateQueue(ctx, api.CreateQueueRequest{Name: "mail.outbox"}); !client.IsCode(err, api.CodeQueueExists) {
		t.Fatalf("second CreateQueue: %v", err)
	}
	if _, err := c.CreateQueue(ctx, api.CreateQueueRequest{Name: "tiny", Shards: 2}); !client.IsCode(err, api.CodeInvalidArgument) {
		t.Fatalf("2 shards: %v", err)
	}
	if _, err := c.Queue(ctx, "nope"); !client.IsCode(err, api.CodeQueueNotFound) {
		t.Fatalf("Queue(nope): %v", err)
	}
	if _, err := c.Put(ctx, "", api.PutMessage{Body: "x"}); !client.IsCode(err, api.CodeInvalidArgument) {
		t.Fatalf("Put to an unnamed queue: %v", err)
	}
	if list, err := c.Queues(ctx); err != nil || len(list) != 1 {
		t.Fatalf("Queues = %v, %v", list, err)
	}

	ids, err := c.Put(ctx, "mail.outbox", api.PutMessage{Body: "hello"}, api.PutMessage{Body: "bye", Delay: "1h"})
	if err != nil || len(ids) != 2 {
		t.Fatalf("Put = %v, %v", ids, err)
	}
	if _, err := c.Put(ctx, "mail.outbox", api.PutMessage{Body: "x", Delay: "-1s"}); !client.IsCode(err, api.CodeInvalidArgument) {
		t.Fatalf("negative delay: %v", err)
	}
	clk.Advance(2 * time.Minute)
	ds, err := c.Receive(ctx, "mail.outbox", api.ReceiveRequest{Max: 10})
	if err != nil || len(ds) != 1 || ds[0].ID != ids[0] || ds[0].Body != "hello" {
		t.Fatalf("Receive = %+v, %v", ds, err)
	}
	if dead, err := c.Nack(ctx, "mail.outbox", ds[0].Receipt, "smtp 451"); err != nil || dead {
		t.Fatalf("Nack = %v, %v", dead, err)
	}
	clk.Advance(5 * time.Second)
	ds, err = c.Receive(ctx, "mail.outbox", api.ReceiveRequest{Max: 10})
	if err != nil || len(ds) != 1 || ds[0].Attempt != 2 {
		t.Fatalf("second Receive = %+v, %v", ds, err)
	}
	if rel, err := c.Release(ctx, "mail.outbox", ds[0].Receipt); err != nil || rel.Released != 1 {
		t.Fatalf("Release = %+v, %v", rel, err)
	}
	ds, err = c.Receive(ctx, "mail.outbox", api.ReceiveRequest{})
	if err != nil || len(ds) != 1 || ds[0].Attempt != 2 {
		t.Fatalf("after release = %+v, %v", ds, err)
	}
	if dead, err := c.Nack(ctx, "mail.outbox", ds[0].Receipt, "smtp 550"); err != nil || !dead {
		t.Fatalf("last Nack = %v, %v", dead, err)
	}
	letters, err := c.DeadLetters(ctx, "mail.outbox", 10)
	if err != nil || len(letters) != 1 || letters[0].LastError != "delivery 2: smtp 550" {
		t.Fatalf("DeadLetters = %+v, %v", letters, err)
	}
	back, err := c.Requeue(ctx, "mail.outbox", letters[0].ID)
	if err != nil || len(back) != 1 {
		t.Fatalf("Requeue = %v, %v", back, err)
	}
	if gone, err := c.DeleteDeadLetters(ctx, "mail.outbox", letters[0].ID); err != nil || len(gone) != 0 {
		t.Fatalf("DeleteDeadLetters of a requeued letter = %v, %v; want none found", gone, err)
	}
	if _, err := c.DeleteDeadLetters(ctx, "mail.outbox"); !client.IsCode(err, api.CodeInvalidArgument) {
		t.Fatalf("DeleteDeadLetters with no ids: %v, want invalid_argument", err)
	}
	st, err := c.QueueStats(ctx, "mail.outbox")
	if err != nil || st.Messages != 2 || len(st.Shards) != 4 {
		t.Fatalf("QueueStats = %+v, %v", st, err)
	}
	clk.Advance(time.Hour)
	ds, err = c.Receive(ctx, "mail.outbox", api.ReceiveRequest{Max: 10})
	if err != nil || len(ds) != 2 {
		t.Fatalf("last Receive = %+v, %v", ds, err)
	}
	receipts := []string{ds[0].Receipt, ds[1].Receipt}
	if err := c.Ack(ctx, "mail.outbox", receipts...); err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(ctx, "mail.outbox", receipts...); err != nil {
		t.Fatalf("acking twice: %v", err)
	}
	if st, _ := c.QueueStats(ctx, "mail.outbox"); st == nil || st.Messages != 0 {
		t.Fatalf("left: %+v", st)
	}
}

// A put whose answer is lost is sent again only when every message has a
// dedup id, and then stores each message once.
func TestPutWithDedupIDsIsRetried(t *testing.T) {
	t.Parallel()
	b := servertest.NewBackend(t, nil)
	f := &flaky{next: b.Handler, n: 2, suffix: "/messages"}
	c := start(t, f, client.WithRetries(3))
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, api.CreateQueueRequest{Name: "bills", Shards: 4}); err != nil {
		t.Fatal(err)
	}
	out, err := c.PutMessages(ctx, "bills", api.PutMessage{Body: "charge 17", DedupID: "order-17"}, api.PutMessage{Body: "charge 18", DedupID: "order-18"})
	if err != nil {
		t.Fatalf("PutMessages with dedup ids and retries: %v", err)
	}
	if len(f.seen) != 3 || len(out.IDs) != 2 || len(out.Duplicates) != 2 {
		t.Fatalf("%d attempts answered %+v; want 3 attempts, the last finding both stored", len(f.seen), out)
	}
	if st, err := c.QueueStats(ctx, "bills"); err != nil || st.Messages != 2 {
		t.Fatalf("QueueStats = %+v, %v; want 2 messages stored", st, err)
	}
	f.mu.Lock()
	f.n, f.seen = 1, nil
	f.mu.Unlock()
	if _, err := c.Put(ctx, "bills", api.PutMessage{Body: "no id"}); !client.IsCode(err, api.CodeUnknownOutcome) {
		t.Fatalf("Put without dedup ids = %v, want the unknown outcome, not a retry", err)
	}
	if len(f.seen) != 1 {
		t.Fatalf("a put without dedup ids was sent %d times", len(f.seen))
	}
}

func TestPauseResumePurgeAndDeleteQueue(t *testing.T) {
	t.Parallel()
	c, _ := queueBackend(t)
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, api.CreateQueueRequest{Name: "jobs", Shards: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "jobs", api.PutMessage{Body: "x"}); err != nil {
		t.Fatal(err)
	}
	p, err := c.PauseQueue(ctx, "jobs")
	if err != nil || !p.Paused || p.Since == nil {
		t.Fatalf("PauseQueue = %+v, %v", p, err)
	}
	if again, err := c.PauseQueue(ctx, "jobs"); err != nil || !again.Since.Equal(*p.Since) {
		t.Fatalf("pausing again = %+v, %v; want the first pause, unchanged", again, err)
	}
	if got, err := c.QueuePause(ctx, "jobs"); err != nil || !got.Paused {
		t.Fatalf("QueuePause = %+v, %v", got, err)
	}
	if ds, err := c.Receive(ctx, "jobs", api.ReceiveRequest{Max: 5}); err != nil || len(ds) != 0 {
		t.Fatalf("receive while paused: %d messages, %v", len(ds), err)
	}
	if r, err := c.ResumeQueue(ctx, "jobs"); err != nil || r.Paused {
		t.Fatalf("ResumeQueue = %+v, %v", r, err)
	}
	if ds, err := c.Receive(ctx, "jobs", api.ReceiveRequest{Max: 5}); err != nil || len(ds) != 1 {
		t.Fatalf("receive after the resume: %d messages, %v; want 1", len(ds), err)
	}
	if _, err := c.Put(ctx, "jobs", api.PutMessage{Body: "y"}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.PurgeQueue(ctx, "jobs", true); err != nil || res.Messages != 2 || res.DeadLetters != 0 {
		t.Fatalf("PurgeQueue = %+v, %v; want the 2 messages (one in flight)", res, err)
	}
	if _, err := c.PurgeQueue(ctx, "nope", false); !client.IsCode(err, api.CodeQueueNotFound) {
		t.Fatalf("purging an unknown queue: %v", err)
	}
	if _, err := c.PauseQueue(ctx, "nope"); !client.IsCode(err, api.CodeQueueNotFound) {
		t.Fatalf("pausing an unknown queue: %v", err)
	}
	if _, err := c.ResumeQueue(ctx, ""); err == nil {
		t.Fatal("resuming a queue without a name was sent")
	}
	if _, err := c.Put(ctx, "jobs", api.PutMessage{Body: "z"}); err != nil {
		t.Fatal(err)
	}
	del, err := c.DeleteQueue(ctx, "jobs")
	if err != nil || del.Queue != "jobs" || del.Messages != 1 || !del.RecreatableAt.After(del.DeletedAt) {
		t.Fatalf("DeleteQueue = %+v, %v; want the 1 message removed, and when the name is free", del, err)
	}
	if again, err := c.DeleteQueue(ctx, "jobs"); err != nil || !again.DeletedAt.Equal(del.DeletedAt) || again.Messages != 0 {
		t.Fatalf("deleting again = %+v, %v; want the first delete's time and nothing removed", again, err)
	}
	if _, err := c.DeleteQueue(ctx, "nope"); !client.IsCode(err, api.CodeQueueNotFound) {
		t.Fatalf("deleting an unknown queue: %v", err)
	}
	if _, err := c.Put(ctx, "jobs", api.PutMessage{Body: "z"}); !client.IsCode(err, api.CodeQueueNotFound) {
		t.Fatalf("a put to the deleted queue: %v", err)
	}
	if _, err := c.DeleteQueue(ctx, ""); err == nil {
		t.Fatal("deleting a queue without a name was sent")
	}
}
