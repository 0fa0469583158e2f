package cassandra_test

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/cassandra"
)

// A put that claimed its dedup id and died before writing the message
// leaves a claim and no message. The claim is written here by hand, as
// that put would have; a repeat must store the claimed message, under the
// claimed key and enqueued_at, and say it is a duplicate.
func TestDedupRepeatCompletesAClaimWithoutMessage(t *testing.T) {
	t.Parallel()
	d := sharedDriver(t)
	ctx := ctxT(t)
	exec := rawExec(t, ctx)
	now := time.Now().UTC().Truncate(time.Millisecond)
	key := driver.MessageKey{Shard: 2, Due: now, ID: driver.MessageID{0x11, 6: 0x11, 8: 0x80, 15: 0x01}}
	body := []byte("ship order 4")
	hash := sha256.Sum256(body)
	enqueued := now.Add(-time.Second)
	exec("INSERT INTO "+d.Keyspace()+".queue_dedup (queue, dedup_id, shard, due, id, enqueued_at, body_hash, written_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TTL 60",
		"q-orphan", "order-4", key.Shard, key.Due, [16]byte(key.ID), enqueued, hash[:], now.UnixMicro())

	repeat := driver.Message{MessageKey: driver.MessageKey{Shard: 0, Due: now.Add(time.Second), ID: driver.MessageID{0x22, 6: 0x11, 8: 0x80}}, Body: body, EnqueuedAt: now}
	r, err := d.PutDedupMessage(ctx, &driver.PutDedupParams{Queue: "q-orphan", DedupID: "order-4", Window: time.Minute, Message: repeat})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Duplicate || !r.SameBody || r.Key.ID != key.ID || r.Key.Shard != key.Shard {
		t.Fatalf("repeat = %+v, want a duplicate naming the claimed key %+v", r, key)
	}
	got, err := d.GetMessage(ctx, &driver.GetMessageParams{Queue: "q-orphan", Key: key})
	if err != nil {
		t.Fatalf("the claimed message was not stored by the repeat: %v", err)
	}
	if string(got.Body) != string(body) || !got.EnqueuedAt.Equal(enqueued) || got.Deliveries != 0 {
		t.Fatalf("stored %+v, want the claimed message's body and enqueued_at", got)
	}
	if _, err := d.GetMessage(ctx, &driver.GetMessageParams{Queue: "q-orphan", Key: repeat.MessageKey}); err == nil {
		t.Fatal("the repeat also stored its own copy")
	}
}

// The window may not outlive the queue tables' gc_grace_seconds: a repeat
// after an acknowledgement's tombstones are gone would bring the message
// back. The driver refuses a longer window and writes nothing.
func TestDedupWindowBeyondGCGraceIsRefused(t *testing.T) {
	t.Parallel()
	d := sharedDriver(t)
	ctx := ctxT(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	m := driver.Message{MessageKey: driver.MessageKey{Due: now, ID: driver.MessageID{0x33, 6: 0x11, 8: 0x80}}, Body: []byte("x"), EnqueuedAt: now}
	p := &driver.PutDedupParams{Queue: "q-grace", DedupID: "long", Window: cassandra.DefaultQueueGCGrace + time.Second, Message: m}
	if _, err := d.PutDedupMessage(ctx, p); err == nil || !strings.Contains(err.Error(), "gc_grace_seconds") {
		t.Fatalf("a window past gc_grace_seconds: %v, want a refusal naming it", err)
	}
	if _, err := d.GetMessage(ctx, &driver.GetMessageParams{Queue: "q-grace", Key: m.MessageKey}); err == nil {
		t.Fatal("the refused put stored its message")
	}
	p.Window = cassandra.DefaultQueueGCGrace
	if r, err := d.PutDedupMessage(ctx, p); err != nil || r.Duplicate {
		t.Fatalf("a window of exactly gc_grace_seconds: %+v, %v", r, err)
	}
}
