// Package cas is the compare-and-set baseline (“Highly Available Counters Using Cassandra”, linearizable
// counter): read the value, then store value+delta with a lightweight
// transaction that applies only if the value is unchanged, retrying with
// backoff when another writer got there first.
//
// It is kept so users can compare it with the CRDT models on their own
// data. It is not retry-safe: a compare-and-set whose outcome is unknown
// (a timeout) may have applied, and calling Add again may count twice.
// Under contention every writer but one loses each round, so throughput on
// one hot counter collapses as writers are added.
package cas
