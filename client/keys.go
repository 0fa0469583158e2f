package client

import (
	"context"
	"net/url"

	"github.com/abacusdb/abacus/api"
)

// CreateKey makes an API key; the answer's Token is shown this once. The
// client's own key needs the scope "*:admin".
func (c *Client) CreateKey(ctx context.Context, req api.CreateKeyRequest) (*api.CreatedKey, error) {
	return call[api.CreatedKey](ctx, c, "POST", "/v1/keys", req)
}

// Keys lists the API keys, never their secrets; it reads every page.
func (c *Client) Keys(ctx context.Context) ([]api.Key, error) {
	return allPages(ctx, c, "/v1/keys", func(out *api.KeyList) ([]api.Key, string) { return out.Keys, out.Next })
}

// RevokeKey revokes the key with that id: at once on the server that
// answers, within 10 seconds on the others.
func (c *Client) RevokeKey(ctx context.Context, id string) error {
	if err := requireName("API key", id); err != nil {
		return err
	}
	return c.do(ctx, "DELETE", "/v1/keys/"+url.PathEscape(id), nil, nil)
}
