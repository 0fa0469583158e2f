// Package server is the Abacus HTTP API server: JSON under /v1 (see
// api/openapi.yaml), plus /healthz, /readyz and Prometheus /metrics.
//
// The server is a thin layer over an abacus.Client. Its own work is making
// the wire contract hold: strict request decoding (unknown fields, trailing
// data, numbers outside int64 and invalid UTF-8 are refused with a message
// naming the field), one JSON error format with a stable code for every
// failure, and a mapping from library errors to those codes that never turns
// an unknown outcome into a success or a plain failure.
//
// # Request ids
//
// Every update carries a request id. When the caller sends none, the server
// makes one up and returns it (in the body, or in the Abacus-Request-Id
// header when the update failed), so a caller that gets unknown_outcome can
// still retry safely: a retry with the same id that reaches the same process
// is counted once. Ledger updates (…/ledgers/{ledger}/credits, debits,
// updates, transfers) do the same, and their retries are recognised by any process
// sharing the store, within the ledger's history (docs/ledger.md).
//
// # Shutdown
//
// Serve and Run shut down in an order that loses no acknowledged update:
// stop accepting, let in-flight requests finish (each waits for the shard
// write that persists it), then stop the client.
//
// # Metrics
//
// Create the client with Hooks(registry) and the server with the same
// registry to export the sharded engine's measurements (group commit sizes,
// shard write latency, shards per read, GC runs) next to the HTTP ones.
package server
