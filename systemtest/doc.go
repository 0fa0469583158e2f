// Package systemtest holds end-to-end tests of real processes: several
// `abacus serve` processes built from cmd/abacus sharing one real Cassandra,
// a load generator that knows exactly what it sent, SIGKILL of a server
// mid-load, and garbage collection while a Cassandra node is down.
//
// The tests need a Cassandra (ABACUS_TEST_CASSANDRA, set by `make test`) and
// skip, saying so, without one. Tests that stop a Cassandra node additionally
// need ABACUS_TEST_CASSANDRA_FAULTS=1, because stopping a node disturbs other
// packages' tests running at the same time; `make test` runs them in a
// separate, serial phase.
//
// The fault suite (TestFault*, `make test-faults`, docs/faults.md) runs
// every model under one load generator and one checker through five faults.
package systemtest
