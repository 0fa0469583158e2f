package driver

import (
	"context"
	"fmt"
	"math"
	"time"
)

// MaxAPIKeyBurst is the largest Burst a store keeps (Cassandra stores it
// as an int).
const MaxAPIKeyBurst = math.MaxInt32

// APIKey is the stored form of an API key: everything the server needs to
// recognise the key's secret and decide what it may do, but never the
// secret itself. Validation of its fields belongs to the caller (package
// internal/apikey); drivers store and return what they are given.
type APIKey struct {
	// ID is the key's public identifier, the part of a token before its
	// secret. Unique in the store.
	ID string
	// Name is the operator's label for the key ("ci", "billing-service").
	Name string
	// Scopes are the grants the key carries, in the text form package
	// internal/apikey parses ("ns:likes:write", "*:admin").
	Scopes []string
	// KDF names the key derivation function and its parameters, Salt is its
	// salt and Hash its output for the key's secret. Keeping the parameters
	// with each key lets later releases raise them for new keys only.
	KDF  string
	Salt []byte
	Hash []byte
	// RatePerSecond and Burst limit the key's requests on each server (a
	// token bucket); zero RatePerSecond means no limit.
	RatePerSecond float64
	Burst         int
	// CreatedAt is when the key was made.
	CreatedAt time.Time
}

// CheckStorable reports whether k's limits are numbers every store can
// write and read back. Both stores refuse to create a key that fails it:
// a record they could not read again would break every later list of
// keys, not only the request that wrote it.
func (k *APIKey) CheckStorable() error {
	switch {
	case math.IsNaN(k.RatePerSecond) || math.IsInf(k.RatePerSecond, 0) || k.RatePerSecond < 0:
		return fmt.Errorf("API key %q: rate %v is not a finite number ≥ 0", k.ID, k.RatePerSecond)
	case k.Burst < 0 || k.Burst > MaxAPIKeyBurst:
		return fmt.Errorf("API key %q: burst %d is outside 0 to %d", k.ID, k.Burst, MaxAPIKeyBurst)
	}
	return nil
}

// CreateAPIKeyParams are the parameters of APIKeys.CreateAPIKey.
type CreateAPIKeyParams struct {
	Key APIKey
}

// GetAPIKeyParams are the parameters of APIKeys.GetAPIKey.
type GetAPIKeyParams struct {
	ID string
}

// ListAPIKeysParams are the parameters of APIKeys.ListAPIKeys.
type ListAPIKeysParams struct{}

// DeleteAPIKeyParams are the parameters of APIKeys.DeleteAPIKey.
type DeleteAPIKeyParams struct {
	ID string
}

// APIKeys stores API key records. A key is created once and deleted once
// (revoked); it never changes in between, so every server that reads it
// sees the same grants.
type APIKeys interface {
	// CreateAPIKey stores a new key. If one with the same ID exists it
	// returns ErrExists and leaves the stored record unchanged, so of two
	// processes racing to create the same ID exactly one succeeds (the
	// first-start admin key relies on this).
	CreateAPIKey(ctx context.Context, p *CreateAPIKeyParams) error

	// GetAPIKey returns the key or ErrNotFound.
	GetAPIKey(ctx context.Context, p *GetAPIKeyParams) (*APIKey, error)

	// ListAPIKeys returns every key sorted by ID.
	ListAPIKeys(ctx context.Context, p *ListAPIKeysParams) ([]*APIKey, error)

	// DeleteAPIKey removes the key, or returns ErrNotFound if there is none.
	DeleteAPIKey(ctx context.Context, p *DeleteAPIKeyParams) error
}
