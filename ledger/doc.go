// Package ledger implements the ledger model (seed 004, approach 2b): a
// PN-counter whose actors remember the request ids they applied, so that a
// retried credit or debit is recognised and not applied twice.
//
// This file's package holds the pure state (state.go, encoding.go) and the
// engine that stores it through a driver.Ledgers (engine.go).
package ledger
