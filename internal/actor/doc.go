// Package actor implements the actor model (“Highly Available Counters Using Cassandra”, state-based): each
// actor — a writer that knows the absolute value of its own part, such as
// the open quantity of one order — sets that value at a version, and the
// counter is the sum of every actor's latest value.
//
// The version is the write timestamp, so the store's last-write-wins rule
// keeps the highest version whatever order writes arrive in, and sending a
// set again is harmless: the model is idempotent without any request id.
// A version carries one value: Check refuses another value at a version it
// reads as stored, and a set that would take the sum it reads outside
// int64. Two servers setting one version to different values at the same
// moment can both succeed; the greater value then wins on every replica.
// Sum never fails: concurrent sets may add up past int64, and the sum is
// exact (crdt.Wide).
package actor
