// Package drivertest is the conformance suite every storage driver must pass.
//
// A driver's own test calls Exercise with a function that opens the driver
// under test:
//
//	func TestConformance(t *testing.T) {
//		drivertest.Exercise(t, func(t *testing.T) driver.Driver { ... })
//	}
//
// The suite checks the contracts written on the driver interfaces, above all
// the timestamp rules the models' correctness rests on: an older write never
// overwrites a newer one, a fold replayed any number of times gives the same
// result, a fold at a lower timestamp never overwrites a newer tally, and a
// shard deleted by a fold stays deleted when a late, older write arrives.
// For queues it checks message order and ranges, that a late update never
// brings a deleted message back, that leases admit one holder and expire,
// and that dead letters move atomically enough to be repeated (queue.go).
//
// Every subtest uses its own freshly named namespaces and counters, so the
// suite can share one store (one Cassandra keyspace) between subtests.
//
// The ledger contracts are in ledger.go: actor rows follow the same
// last-write-wins rules, and a request id's claim has exactly one winner
// among racing callers, is released only by a caller that names it
// exactly, and expires after its TTL.
//
// The counter models' contracts are in counters.go. Their interfaces
// (driver.Actors, driver.NativeCounters, driver.CASCounters) are not part
// of driver.Driver yet, so Exercise asserts them on the driver it is given
// and fails if one is missing. Actor values follow last-write-wins on
// their versions and settle ties in Cassandra's order; native adds sum
// exactly under concurrency; a compare-and-set is atomic with its check,
// which racing inserts and racing increment loops verify.
// The events contracts are in events.go: events are rows keyed by (time,
// id) that a replay writes again, read newest first within After < time
// <= UpTo however many there are; markers and rollups obey their
// timestamps; DeleteEventBuckets removes what was written at or below its
// timestamp, for good, and nothing above it. driver.Events is not yet part
// of driver.Driver, but Exercise fails a driver that lacks it.
package drivertest
