// Package client is a Go client for the Abacus HTTP API (package server).
//
//	c, err := client.New("http://127.0.0.1:7070", client.WithRetries(3))
//	id, err := c.Add(ctx, "default", "likes", 1)
//	v, err := c.Get(ctx, "default", "likes")
//
// Errors answered by the server are *Error values carrying the API's error
// code; test them with IsCode. Anything else (a refused connection, a
// timeout) is a transport error.
//
// # Retries
//
// By default the client never retries: a caller that gets an unknown outcome
// decides what to do. With WithRetries(n) it retries updates that failed with
// a transport error or a 503 (unknown_outcome, not_applied, unavailable) up
// to n times with backoff, always with the same request id. The client picks
// the id before the first attempt, so a retry that reaches the same server
// process is recognised and counted once. A retry that lands on a different
// process behind a load balancer is counted again: the sharded model is
// at-least-once across processes. Ledger updates (Credit, Debit,
// UpdateLedger) are recognised on any server while the request is within
// the ledger's history (docs/ledger.md), so retrying them behind a load
// balancer is exact.
package client
