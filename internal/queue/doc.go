// Package queue is Abacus' time-sharded delay queue (“cassandra-ruby-queue”): messages
// with a due time, spread over a fixed ring of shard partitions by the
// time they were put, taken by consumers that coordinate per shard with a
// lease, retried a bounded number of times and then kept as dead letters.
// It runs on any driver.Queues (the embedded Pebble store or Cassandra).
//
// # Layout
//
// A queue has N shards (at least four) and a shard window (a minute by
// default); package shard does the arithmetic. A message put at time t
// goes into the shard of t's window and is ordered there by its due time
// and its time-based id. Producers thus write one shard at a time, and
// consumers work the shard two windows back, which no producer with a
// clock less than a window off writes any more.
//
// # Consuming
//
// A consumer holds at most one shard lease at a time: a static column of
// the shard's partition, taken with a lightweight transaction (IF lock =
// null), written with a TTL so that a crashed consumer's lease lapses, and
// renewed (IF lock = me) while it works. Holding the lease it reads due
// messages in batches; before handing a message out it counts the delivery
// and hides the message until the visibility timeout ends (one write for
// the batch). Acknowledging deletes the message; a failure leaves it hidden
// until the timeout, after which any consumer may take it again; a message
// delivered MaxDeliveries times moves to the queue's dead letters with its
// last error. Delivery is therefore at least once, and an acknowledged
// message is never delivered again (short of a replica resurrecting it, see
// gc_grace_seconds in package driver/cassandra).
//
// Each round a consumer looks at the shard two windows back, and every
// CatchUpInterval (and on its first round) at every shard except the
// producers' current one, oldest first: the catch-up sweep. It takes care
// of consumers that fell behind or started late, and of delayed messages,
// which stay in the shard they were put in until they are due. A due
// message therefore waits at most one shard window plus the catch-up
// interval (plus a lease hand-over) before it is delivered. Looking at a
// shard costs two reads; only a shard with a deliverable message costs a
// lightweight transaction.
//
// # Tombstones and the floor
//
// Deleted messages leave tombstones, which Cassandra reads through until
// compaction drops them after gc_grace_seconds: the reason queues are a
// known Cassandra anti-pattern. Each shard therefore records a floor in a
// static column, a due time no live message of the shard is older than,
// and reads start there, skipping the tombstones of everything consumed
// before. A consumer that finds the first live message due at t sets the
// floor to min(t, now - MaxClockSkew). That is safe because messages only
// ever leave a shard, except new ones, and a new message's due time is
// never before its producer's clock (a due time in the past is taken as
// now), which is at most MaxClockSkew behind the consumer's. For messages
// that land below a floor anyway (a put whose outcome was unknown and that
// a replica applied much later), each consumer reads every shard from the
// start once per DeepSweepInterval.
//
// While a lease lasts, the consumer also remembers the last message it
// handed out and reads on from there, so that it does not page through its
// own messages in flight; every few reads it moves the floor up to the
// first live message, so that the next holder of the shard starts there.
//
// # Time
//
// Due times, shards, visibility and the sweep use the Service's clock,
// which tests replace with a manual one. Leases use real time on both
// drivers, because Cassandra's TTLs do.
package queue
