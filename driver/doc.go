// Package driver is the storage seam of Abacus: the interfaces every storage
// backend implements, the parameter structs their operations take, and the
// sentinel errors they return.
//
// Each capability (namespaces, shards, ledgers, and later events and queues)
// is its own interface so a model depends only on what it uses. Every
// operation takes a context and a *Params struct, so fields can be added
// without breaking callers.
//
// Timestamps are microseconds since the Unix epoch, the unit Cassandra uses
// for write timestamps. Both drivers resolve conflicting writes to the same
// cell the same way: the higher write timestamp wins, and on a tie a delete
// wins over a write. The conformance suite in package drivertest checks this
// and every other contract against each driver.
//
// Two drivers implement the seam: package embedded (Pebble, one process per
// data directory) and package cassandra (Apache Cassandra 2.1+ and ScyllaDB).
package driver
