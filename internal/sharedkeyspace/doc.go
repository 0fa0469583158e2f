// Package sharedkeyspace gives a test package one Cassandra driver on one
// fresh keyspace, shared by all its tests and dropped when the package's
// tests end. Creating a keyspace and its tables costs seconds of schema
// agreement on a small cluster, which a keyspace per test would multiply;
// tests sharing one keep apart by using their own namespaces.
//
// It lives apart from internal/cassandratest because it imports
// driver/cassandra, whose own tests use cassandratest.
package sharedkeyspace
