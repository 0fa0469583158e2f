// Package registry keeps the named records that never change once created
// — namespaces and queues — in front of the store: one cache-aside lookup,
// one create, and the not-found and exists errors of each kind, so the two
// kinds cannot drift apart.
package registry
