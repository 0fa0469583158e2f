// Package events implements the events model (“Highly Available Counters Using Cassandra”, op-based): every
// increment is one row keyed by its event time and request id, so a retry
// carrying the same id writes the same row again, from any process, with
// no read on the write path.
//
// A counter's value is its rollup — the sum of every event at or before
// the rollup's epoch — plus the events after the epoch. A rollup moves the
// epoch to now - AcceptWindow - RollupDelay; it is written with the epoch
// as its write timestamp, so a replayed or racing rollup never moves the
// counter backwards. Once a rollup has landed the buckets it covers are
// deleted at the epoch's timestamp.
//
// Why a write acknowledged by this package is never lost to a rollup: the
// writer accepts an event only while now - AcceptWindow < event time, and
// acknowledges it only if that still holds when the write has returned. A
// rollup's epoch trails its own clock by AcceptWindow + RollupDelay, so as
// long as clocks differ by less than RollupDelay every acknowledged event
// is newer than the epoch of any rollup that could have missed it.
//
// A clear writes a rollup of zero at the clear's own time: every event at
// or before that time is cleared — also one still in flight or retried
// later, which is what clearing "as of" a time means — and the counter is
// usable at once.
//
// Increments are never refused for range: no server sees the others'
// concurrent events, so their total may pass int64. Reads add it exactly
// (crdt.Wide) and report it saturated; a rollup, which stores an int64,
// moves its epoch only as far as the latest event time at which the
// running total fits, leaving later events to reads.
package events
