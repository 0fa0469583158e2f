// Package combine sends many small writes of a process to the store in
// shared requests: group commit across keys. At most MaxInflight requests
// are in flight; a write that arrives while all of them are busy waits for
// the next, which carries every write queued meanwhile (up to MaxWrites
// writes and about MaxBytes). A write that finds a request slot free is
// sent at once, alone, so a quiet process waits for no company; a write
// too large to share a request goes straight to the store and takes no
// slot.
//
// A combined request changes no promise of the writes it carries
// (docs/architecture.md, "Group commit across counters"): each write is
// the one its caller would have sent alone; each is answered only once
// the request holding it succeeded; a request the store refused before
// its deadline is not atomic across keys, so each of its writes is sent
// again on its own and gets its own answer (a failure then is of unknown
// outcome, whatever the store said: the failed request may have carried
// the write); and the write timeout bounds each write from the moment it
// was handed over, queueing included.
//
// The sharded model combines its mutators' shard writes, the events model
// its events.
package combine
