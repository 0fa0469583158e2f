// Package registry keeps the namespace records, which never change once
// created, in front of the store: one cache-aside lookup, one create, and
// the not-found and exists errors. Queue records are not kept here: a
// queue can be deleted, so a process trusts its record only for a refresh
// (package refreshcache).
package registry
