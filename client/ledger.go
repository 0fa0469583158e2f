package client

import (
	"cmp"
	"context"
	"net/url"
	"strconv"

	"github.com/abacusdb/abacus/api"
)

// Ledgers (namespaces of model "ledger"). An empty namespace means
// api.DefaultLedgerNamespace, which the server creates on first use.
//
// Retrying a ledger update is safe against any server: a retry that carries
// the same request id is recognised (see docs/ledger.md for how long) and
// gets the first attempt's answer, Applied, marked Replayed.

func ledgerPath(ns, ledger string) string {
	if ns == "" {
		ns = api.DefaultLedgerNamespace
	}
	return "/v1/namespaces/" + escape(ns) + "/ledgers/" + escape(ledger)
}

// Credit adds a positive amount to a ledger and returns the answer, whose
// RequestID is requestID or, when that is empty, a fresh one. On error the
// returned response still carries the request id, so an unknown outcome can
// be retried with it.
func (c *Client) Credit(ctx context.Context, namespace, ledger string, amount int64, requestID string) (*api.LedgerUpdateResponse, error) {
	return c.ledgerUpdate(ctx, namespace, ledger, "credits", api.LedgerUpdateRequest{Amount: amount, RequestID: requestID})
}

// Debit subtracts a positive amount from a ledger; see Credit.
func (c *Client) Debit(ctx context.Context, namespace, ledger string, amount int64, requestID string) (*api.LedgerUpdateResponse, error) {
	return c.ledgerUpdate(ctx, namespace, ledger, "debits", api.LedgerUpdateRequest{Amount: amount, RequestID: requestID})
}

// UpdateLedger applies a signed, non-zero amount; see Credit.
func (c *Client) UpdateLedger(ctx context.Context, namespace, ledger string, req api.LedgerUpdateRequest) (*api.LedgerUpdateResponse, error) {
	return c.ledgerUpdate(ctx, namespace, ledger, "updates", req)
}

func (c *Client) ledgerUpdate(ctx context.Context, namespace, ledger, kind string, req api.LedgerUpdateRequest) (*api.LedgerUpdateResponse, error) {
	if req.RequestID == "" {
		req.RequestID = NewRequestID()
	}
	out := &api.LedgerUpdateResponse{Namespace: namespace, Ledger: ledger, RequestID: req.RequestID}
	if err := requireName("ledger", ledger); err != nil {
		return out, err
	}
	// Refuse what the server would refuse, without a round trip.
	switch {
	case kind != "updates" && req.Amount <= 0:
		return out, &Error{Code: api.CodeInvalidArgument, Message: "a " + kind[:len(kind)-1] + "'s amount must be positive"}
	case req.Amount == 0:
		return out, &Error{Code: api.CodeInvalidArgument, Message: "a ledger update's amount must not be zero"}
	}
	path := ledgerPath(namespace, ledger) + "/" + kind
	err := c.retrying(ctx, func() error {
		return c.do(ctx, "POST", path, req, out)
	})
	if err == nil {
		answeredByAnOlderServer(&out.Applied, &out.Replayed)
	}
	return out, err
}

// Transfer moves a positive amount from ledger from to ledger req.To of
// the same namespace, once per request id: both sides are written
// together, so both are applied or neither is. Its answer, and the request
// id it carries on error, are as Credit's. Retrying it with its request id
// is safe against any server.
func (c *Client) Transfer(ctx context.Context, namespace, from string, req api.LedgerTransferRequest) (*api.LedgerTransferResponse, error) {
	if req.RequestID == "" {
		req.RequestID = NewRequestID()
	}
	out := &api.LedgerTransferResponse{Namespace: namespace, From: from, To: req.To, RequestID: req.RequestID}
	if err := requireName("ledger", from); err != nil {
		return out, err
	}
	if err := requireName("ledger", req.To); err != nil {
		return out, err
	}
	// Refuse what the server would refuse, without a round trip.
	switch {
	case req.Amount <= 0:
		return out, &Error{Code: api.CodeInvalidArgument, Message: "a transfer's amount must be positive"}
	case req.To == from:
		return out, &Error{Code: api.CodeInvalidArgument, Message: "a transfer needs two ledgers; " + strconv.Quote(from) + " is both source and destination"}
	}
	path := ledgerPath(namespace, from) + "/transfers"
	err := c.retrying(ctx, func() error {
		return c.do(ctx, "POST", path, req, out)
	})
	return out, err
}

// answeredByAnOlderServer reads a success with applied false as what it
// meant before servers said replayed: a recognised retry. A server of this
// release never answers a success with applied false, so callers (and the
// CLI) see one meaning during a rolling upgrade.
func answeredByAnOlderServer(applied, replayed *bool) {
	if !*applied {
		*applied, *replayed = true, true
	}
}

// UpdateLedgers applies up to api.MaxBatchItems ledger updates, each once
// per its request id, and returns one result per update, in order: Applied
// (and Replayed when an earlier attempt applied it), or the update's own
// Error. If any update is invalid the server refuses the whole batch,
// applies nothing, and UpdateLedgers returns its error. Updates of one ledger share their
// writes on the server, so a batch is much cheaper than its updates sent
// one by one.
//
// Updates without a request id get one here, before the first attempt, and
// retries behave as in UpdateBatch: with retries, updates whose result is
// retryable are sent again with their ids; an update whose last attempt got
// no answer is reported as unknown_outcome, to be sent again with its id.
func (c *Client) UpdateLedgers(ctx context.Context, updates []api.LedgerBatchUpdate) ([]api.LedgerBatchResult, error) {
	res, err := sendBatch(ctx, c, ledgerBatch, updates)
	for i := range res {
		if res[i].Error == nil {
			answeredByAnOlderServer(&res[i].Applied, &res[i].Replayed)
		}
	}
	return res, err
}

var ledgerBatch = batchKind[api.LedgerBatchUpdate, api.LedgerBatchResult]{
	path:      "/v1/ledger-updates",
	requestID: func(u *api.LedgerBatchUpdate) *string { return &u.RequestID },
	unanswered: func(u api.LedgerBatchUpdate) api.LedgerBatchResult {
		return api.LedgerBatchResult{Namespace: cmp.Or(u.Namespace, api.DefaultLedgerNamespace), Ledger: u.Ledger, RequestID: u.RequestID}
	},
	fields: func(r *api.LedgerBatchResult) (*string, **api.Error) { return &r.RequestID, &r.Error },
}

// LedgerValue reads a ledger.
func (c *Client) LedgerValue(ctx context.Context, namespace, ledger string) (*api.LedgerValue, error) {
	return callNamed[api.LedgerValue](ctx, c, "ledger", ledger, "GET", ledgerPath(namespace, ledger), nil)
}

// FindLedger reads a ledger and has the server fold its own actor's history
// and write it back (see the design's find!).
func (c *Client) FindLedger(ctx context.Context, namespace, ledger string) (*api.LedgerValue, error) {
	return callNamed[api.LedgerValue](ctx, c, "ledger", ledger, "POST", ledgerPath(namespace, ledger)+"/find", nil)
}

// HasRequestID reports whether a request id is in the history of one of the
// ledger's actors, so that a retry of it would be recognised.
func (c *Client) HasRequestID(ctx context.Context, namespace, ledger, requestID string) (bool, error) {
	if err := requireName("ledger", ledger); err != nil {
		return false, err
	}
	if requestID == "" {
		return false, &Error{Code: api.CodeInvalidArgument, Message: "request id is empty"}
	}
	return callPick(ctx, c, "GET", ledgerPath(namespace, ledger)+"/requests/"+escape(requestID), nil, func(out *api.RequestIDStatus) bool { return out.Known })
}

// LedgerHistory returns a page of a ledger's history: up to limit entries
// (0 means the server's default, 100; at most 1000), newest first, after
// the cursor (empty for the newest; the previous page's Next otherwise).
// A page may hold fewer entries than limit and still have a Next.
func (c *Client) LedgerHistory(ctx context.Context, namespace, ledger, after string, limit int) (*api.LedgerHistory, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := ledgerPath(namespace, ledger) + "/entries"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return callNamed[api.LedgerHistory](ctx, c, "ledger", ledger, "GET", path, nil)
}
