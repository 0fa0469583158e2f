// Package lifecycle decides which generation of a counter an operation
// uses. Deleting a counter (or clearing a sharded one, or deleting a whole
// namespace) does not remove its data in place: it records a cut, a time a
// little in the future, and from that time on every process reads and
// writes the counter under a new stored name, so the counter starts again
// from nothing. A namespace with a TTL cuts every counter at each multiple
// of the TTL, with no record at all. What was stored under older names is
// purged later, once no process can still be writing it.
//
// The cut lies in the future so that every process learns of it before it
// takes effect: a process trusts what it read about a namespace's cuts for
// at most one refresh interval (Cache), and a cut is set further ahead than
// one refresh, the time its write may take, and the clocks' disagreement.
// docs/architecture.md, "Deleting counters", has the argument.
package lifecycle
