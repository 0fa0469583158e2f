package cassandra

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

// Producer de-duplication.
//
// A put with a dedup id first claims the id: INSERT … IF NOT EXISTS USING
// TTL <window> into queue_dedup, a partition per (queue, id), naming the
// message's key, its enqueued_at, a hash of its body and a write timestamp
// ts. Then it writes the message USING TIMESTAMP ts. A put that finds the
// id claimed writes the claimed message again, byte for byte, at the same
// ts, and answers with the claimed key. So:
//
//   - a first put that died, or whose message write timed out, between the
//     claim and the message is completed by any repeat (nothing is lost);
//   - a repeat after the message was delivered, failed or acknowledged
//     changes nothing: those writes carry later timestamps, and cells (or
//     their tombstones) with a later timestamp win over the rewrite. The
//     acknowledgement's tombstones live for gc_grace_seconds, which is why
//     the window may not exceed it;
//   - two puts racing for one id: the lightweight transaction lets one
//     claim win; both write the same cells at the same timestamp.
//
// It relies on writers' clocks being ordered like real time to within the
// time between a put and its message's first delivery: a consumer whose
// clock is that far behind the producer's would write delivery marks (and
// an ack) below ts, and a repeat of the put would undo them — the message
// would be delivered again, never lost.

const queueDedupDDL = `CREATE TABLE IF NOT EXISTS %[1]s.queue_dedup (
	queue text,
	dedup_id text,
	shard int,
	due timestamp,
	id timeuuid,
	enqueued_at timestamp,
	body_hash blob,
	written_at bigint,
	PRIMARY KEY ((queue, dedup_id))
) WITH gc_grace_seconds = %[2]d`

type dedupStatements struct {
	claim, putAt, attributesAt, probe string
}

func newDedupStatements(ks string) dedupStatements {
	return dedupStatements{
		claim: "INSERT INTO " + ks + ".queue_dedup (queue, dedup_id, shard, due, id, enqueued_at, body_hash, written_at)" +
			" VALUES (?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?",
		putAt:        "UPDATE " + ks + ".queue_messages USING TIMESTAMP ? SET body = ?, enqueued_at = ?, deliveries = 0" + byMessage,
		attributesAt: "UPDATE " + ks + ".queue_messages USING TIMESTAMP ? SET attributes = ?" + byMessage,
		probe:        "SELECT queue FROM " + ks + ".queue_dedup LIMIT 1",
	}
}

// PutDedupMessage implements driver.Queues.
func (d *Driver) PutDedupMessage(ctx context.Context, p *driver.PutDedupParams) (*driver.PutDedupResult, error) {
	const op = "put message with dedup id"
	m := p.Message
	switch {
	case p.DedupID == "" || len(p.DedupID) > driver.MaxDedupIDLen:
		return nil, fmt.Errorf("cassandra: %s: the id must be 1 to %d bytes", op, driver.MaxDedupIDLen)
	case p.Window < time.Second || p.Window > d.cfg.QueueGCGrace:
		return nil, fmt.Errorf("cassandra: %s: window %v is outside 1s to the queue tables' gc_grace_seconds (%v)", op, p.Window, d.cfg.QueueGCGrace)
	case m.EnqueuedAt.IsZero():
		return nil, fmt.Errorf("cassandra: %s: message %s has no EnqueuedAt", op, m.ID)
	}
	if err := d.begin(ctx, op); err != nil {
		return nil, err
	}
	cl, err := level(driver.Default, d.cfg.WriteConsistency)
	if err != nil {
		return nil, err
	}
	hash := m.ContentHash()
	due, enqueued := m.Due.UTC().Truncate(time.Millisecond), m.EnqueuedAt.UTC().Truncate(time.Millisecond)
	ts := time.Now().UnixMicro()
	ttl := int((p.Window + time.Second - 1) / time.Second)
	res := &driver.PutDedupResult{Key: driver.MessageKey{Shard: m.Shard, Due: due, ID: m.ID}}
	body := nonNil(m.Body)
	applied, existing, err := d.insertIfNotExists(ctx, d.cfg.WriteConsistency, op, "dedup id", p.DedupID, d.q.dedup.claim,
		[]any{p.Queue, p.DedupID, m.Shard, due, [16]byte(m.ID), enqueued, hash[:], ts, ttl},
		func(existing map[string]any) bool {
			prev, err := dedupFromRow(existing)
			return err == nil && prev.ts == ts && prev.key.ID == m.ID
		})
	if err != nil {
		return nil, fmt.Errorf("%w (queue %q)", err, p.Queue)
	}
	if !applied {
		prev, err := dedupFromRow(existing)
		if err != nil {
			return nil, fmt.Errorf("cassandra: %s %q: %w", op, p.DedupID, err)
		}
		res = &driver.PutDedupResult{Key: prev.key, Duplicate: true, SameBody: bytes.Equal(prev.hash, hash[:])}
		if !res.SameBody {
			// The claimed message has another body, which this caller
			// does not have: leave it as it is.
			return res, nil
		}
		ts, due, enqueued = prev.ts, prev.key.Due, prev.enqueued
	}
	k := res.Key
	var q interface {
		ExecContext(context.Context) error
	}
	if len(m.Attributes) == 0 {
		q = d.session.Query(d.q.dedup.putAt, ts, body, enqueued, p.Queue, k.Shard, due, [16]byte(k.ID)).Consistency(cl)
	} else {
		// One partition, so one atomic write: the message is never seen
		// without its attributes.
		b := d.session.Batch(gocql.UnloggedBatch).Consistency(cl)
		b.Query(d.q.dedup.putAt, ts, body, enqueued, p.Queue, k.Shard, due, [16]byte(k.ID))
		b.Query(d.q.dedup.attributesAt, ts, encodeAttributes(m.Attributes), p.Queue, k.Shard, due, [16]byte(k.ID))
		q = b
	}
	err = q.ExecContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s %q in %q: %w", op, p.DedupID, p.Queue, mapError(opWrite, err))
	}
	return res, nil
}

// dedupClaim is a queue_dedup row as returned by a claim that was not
// applied.
type dedupClaim struct {
	key      driver.MessageKey
	enqueued time.Time
	hash     []byte
	ts       int64
}

func dedupFromRow(row map[string]any) (dedupClaim, error) {
	bad := func(what string) (dedupClaim, error) {
		return dedupClaim{}, fmt.Errorf("%w: queue_dedup row: %s", errBadRow, what)
	}
	var c dedupClaim
	shard, ok := row["shard"].(int)
	if !ok || shard < 0 {
		return bad("no shard")
	}
	due, ok := row["due"].(time.Time)
	if !ok {
		return bad("no due time")
	}
	id, ok := row["id"].(gocql.UUID)
	if !ok || !driver.MessageID(id).Valid() {
		return bad("no time-based id")
	}
	if c.enqueued, ok = row["enqueued_at"].(time.Time); !ok || c.enqueued.IsZero() {
		return bad("no enqueued_at")
	}
	if c.hash, ok = row["body_hash"].([]byte); !ok || len(c.hash) != sha256.Size {
		return bad("no body hash")
	}
	if c.ts, ok = row["written_at"].(int64); !ok {
		return bad("no written_at")
	}
	c.key = driver.MessageKey{Shard: shard, Due: due.UTC(), ID: driver.MessageID(id)}
	c.enqueued = c.enqueued.UTC()
	return c, nil
}
