package abacus

import (
	"context"
	"fmt"

	"github.com/abacusdb/abacus/internal/ledger"
)

// LedgerTransfer moves an amount from one ledger to another of the same
// namespace.
type LedgerTransfer struct {
	// Namespace defaults to DefaultLedgerNamespace.
	Namespace string
	// From is debited and To credited; they must differ.
	From, To string
	// Amount is positive.
	Amount int64
	// RequestID identifies the transfer, as a ledger update's does: a retry
	// with the same id is recognised and not applied again. It is a
	// request id of both ledgers. A random id is generated when it is
	// empty.
	RequestID string
}

// LedgerTransferResult is the outcome of a transfer.
type LedgerTransferResult struct {
	Namespace string
	From, To  string
	// RequestID is the transfer's request id (generated if none was
	// given); set even when the transfer fails, so an unknown outcome can
	// be retried with it.
	RequestID string
	// Applied and Replayed mean what they mean for a ledger update
	// (LedgerResult).
	Applied  bool
	Replayed bool
}

// Transfer moves a positive amount from ledger From to ledger To of one
// namespace, once per request id: the debit of From and the credit of To
// are written together, so both are applied or neither is
// (docs/ledger-transfers.md). In a namespace with a floor, From's floor
// applies to the debit. It always returns a result carrying the request
// id. Errors:
//
//   - ErrInvalid (the same ledger twice, an amount that is not positive, a
//     bad name or request id), ErrOverflow, ErrNamespaceNotFound,
//     ErrRequestConflict (the id is recorded with another amount): nothing
//     was written; do not retry as is.
//   - ErrBelowFloor: From's floor refused the debit; nothing was written
//     to either ledger.
//   - ErrUnknownOutcome: the transfer may or may not have been applied —
//     both sides or neither. Retry with the same request id.
//   - ErrNotApplied, ErrUnavailable, ErrRightsHeld: not applied; retrying
//     is safe.
func (c *Client) Transfer(ctx context.Context, tr LedgerTransfer) (*LedgerTransferResult, error) {
	if tr.RequestID == "" {
		tr.RequestID = newRequestID()
	}
	res := &LedgerTransferResult{Namespace: tr.Namespace, From: tr.From, To: tr.To, RequestID: tr.RequestID}
	if tr.Amount <= 0 {
		return res, fmt.Errorf("%w: a transfer's amount must be positive, got %d", ErrInvalid, tr.Amount)
	}
	if tr.From == tr.To {
		return res, fmt.Errorf("%w: a transfer needs two ledgers; %q is both source and destination", ErrInvalid, tr.From)
	}
	if err := ledger.ValidateRequestID(tr.RequestID); err != nil {
		return res, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	ns, ts, err := c.ledgerTargets(ctx, tr.Namespace, tr.From, tr.To)
	if err != nil {
		return res, err
	}
	res.Namespace = ns.Name
	r, err := c.ledger.Transfer(ctx, ts[0], ts[1], tr.Amount, tr.RequestID)
	if err != nil {
		return res, publicError(err)
	}
	res.Applied, res.Replayed = true, !r.Applied
	return res, nil
}
