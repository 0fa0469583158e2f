// Package servertest runs Abacus servers for tests: the real HTTP server
// on the embedded store in memory (Backend), a real `abacus serve` process
// built from this module (Process), and a buffer that catches what a server
// or a goroutine writes while the test reads it (Buffer).
//
// It imports internal/server, so that package's own tests cannot use it.
package servertest
