package client

import (
	"context"

	"github.com/abacusdb/abacus/api"
)

// DeleteNamespace deletes a namespace and its counters. It takes effect at
// the answer's EffectiveAt; from then on the namespace is not found.
// Repeating it before then is harmless.
func (c *Client) DeleteNamespace(ctx context.Context, name string) (*api.DeleteResponse, error) {
	return callNamed[api.DeleteResponse](ctx, c, "namespace", name, "DELETE", "/v1/namespaces/"+escape(name), nil)
}

// DeleteCounter deletes a counter ("" namespace means "default"). It takes
// effect at the answer's EffectiveAt: what was counted before then is
// erased, and the counter starts again from zero.
func (c *Client) DeleteCounter(ctx context.Context, namespace, counter string) (*api.DeleteResponse, error) {
	return callNamed[api.DeleteResponse](ctx, c, "counter", counter, "DELETE", counterPath(namespace, counter), nil)
}

// DeleteLedger deletes a ledger, its balance and the request ids it
// remembers, at the answer's EffectiveAt.
func (c *Client) DeleteLedger(ctx context.Context, namespace, ledger string) (*api.DeleteResponse, error) {
	return callNamed[api.DeleteResponse](ctx, c, "ledger", ledger, "DELETE", ledgerPath(namespace, ledger), nil)
}
