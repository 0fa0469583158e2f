// Package actor implements the actor model (seed 001, state-based): each
// actor — a writer that knows the absolute value of its own part, such as
// the open quantity of one order — sets that value at a version, and the
// counter is the sum of every actor's latest value.
//
// The version is the write timestamp, so the store's last-write-wins rule
// keeps the highest version whatever order writes arrive in, and sending a
// set again is harmless: the model is idempotent without any request id.
// The one rule callers must keep: a version is set with one value only
// (two different values at one version leave the greater on every replica).
package actor
