// Package registry keeps named records — namespaces and queues — in front
// of the store: one cache-aside lookup, one create, and the not-found and
// exists errors of each kind, so the two kinds cannot drift apart. A
// namespace record never changes once created and is cached for good; a
// queue record can be deleted, so it is trusted for a refresh and then
// read again (one read shared by every caller waiting for it).
package registry
