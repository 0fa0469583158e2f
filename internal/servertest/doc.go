// Package servertest runs Abacus servers for tests: the real HTTP server
// on the embedded store in memory (Backend).
//
// It imports internal/server, so that package's own tests cannot use it.
package servertest
