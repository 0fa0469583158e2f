package cassandra

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// apiKeysDDL holds one row per API key. Rows are created with a
// lightweight transaction and deleted with one, never updated, so a key's
// grants are the same on every server that reads them.
const apiKeysDDL = `CREATE TABLE IF NOT EXISTS %[1]s.api_keys (
	id text PRIMARY KEY,
	name text,
	scopes list<text>,
	kdf text,
	salt blob,
	hash blob,
	rate double,
	burst int,
	created_at timestamp
)`

const apiKeyColumns = "id, name, scopes, kdf, salt, hash, rate, burst, created_at"

type apiKeyStatements struct {
	insert, get, list, delete, probe string
}

func newAPIKeyStatements(ks string) apiKeyStatements {
	return apiKeyStatements{
		insert: "INSERT INTO " + ks + ".api_keys (" + apiKeyColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
		get:    "SELECT " + apiKeyColumns + " FROM " + ks + ".api_keys WHERE id = ?",
		list:   "SELECT " + apiKeyColumns + " FROM " + ks + ".api_keys",
		delete: "DELETE FROM " + ks + ".api_keys WHERE id = ? IF EXISTS",
		probe:  "SELECT id FROM " + ks + ".api_keys LIMIT 1",
	}
}

// keyLevel is the level of every read and write of api_keys: at least a
// quorum, whatever the server's configured levels. A key's record decides
// who may do anything, so a revocation must be seen by the next read (the
// cache's refresh, 10 s later) and "no keys at all", which makes a new
// admin key at start, must not be a lagging replica's answer. Levels that
// are a quorum already (LOCAL_QUORUM, EACH_QUORUM, ALL) are kept.
func keyLevel(configured driver.Consistency) driver.Consistency {
	switch configured {
	case driver.Quorum, driver.All, driver.LocalQuorum, driver.EachQuorum:
		return configured
	}
	return driver.Quorum
}

// CreateAPIKey inserts the key once (insertRecord): of two processes
// racing to create the same ID exactly one succeeds.
func (d *Driver) CreateAPIKey(ctx context.Context, p *driver.CreateAPIKeyParams) error {
	const op = "create API key"
	if err := d.begin(ctx, op); err != nil {
		return err
	}
	k := p.Key
	if err := k.CheckStorable(); err != nil {
		return fmt.Errorf("cassandra: %s: %w", op, err)
	}
	vals := []any{k.ID, k.Name, k.Scopes, k.KDF, k.Salt, k.Hash, k.RatePerSecond, k.Burst, k.CreatedAt}
	return d.insertRecordAt(ctx, keyLevel(d.cfg.WriteConsistency), op, "API key", k.ID, d.q.apiKeys.insert, vals, func(existing map[string]any) bool {
		salt, _ := existing["salt"].([]byte)
		hash, _ := existing["hash"].([]byte)
		return existing["id"] == k.ID && slices.Equal(salt, k.Salt) && slices.Equal(hash, k.Hash)
	})
}

// GetAPIKey reads one key at keyLevel.
func (d *Driver) GetAPIKey(ctx context.Context, p *driver.GetAPIKeyParams) (*driver.APIKey, error) {
	return getRecord[driver.APIKey, apiKeyRow](ctx, d, keyLevel(d.cfg.ReadConsistency), "get API key", "API key", p.ID, d.q.apiKeys.get, apiKeyFromRow)
}

// ListAPIKeys reads every key at keyLevel, sorted by ID.
func (d *Driver) ListAPIKeys(ctx context.Context, _ *driver.ListAPIKeysParams) ([]*driver.APIKey, error) {
	return listRecords[driver.APIKey, apiKeyRow](ctx, d, keyLevel(d.cfg.ReadConsistency), "list API keys", d.q.apiKeys.list, apiKeyFromRow,
		func(k *driver.APIKey) string { return k.ID })
}

// DeleteAPIKey deletes the key with a lightweight transaction (DELETE ...
// IF EXISTS; deleteRecord).
func (d *Driver) DeleteAPIKey(ctx context.Context, p *driver.DeleteAPIKeyParams) error {
	return d.deleteRecord(ctx, "delete API key", "API key", p.ID, d.q.apiKeys.delete, p.ID)
}

// apiKeyRow is one scanned row of api_keys; pointers are nil where the
// column is null.
type apiKeyRow struct {
	ID        *string
	Name      *string
	Scopes    []string
	KDF       *string
	Salt      []byte
	Hash      []byte
	Rate      *float64
	Burst     *int
	CreatedAt *time.Time
}

func (r *apiKeyRow) dest() []any {
	return []any{&r.ID, &r.Name, &r.Scopes, &r.KDF, &r.Salt, &r.Hash, &r.Rate, &r.Burst, &r.CreatedAt}
}

// apiKeyFromRow converts a scanned row. A key without its KDF, salt or
// hash could never be verified, so such a row is malformed rather than a
// key nobody can use.
func apiKeyFromRow(r apiKeyRow) (*driver.APIKey, error) {
	bad := func(format string, args ...any) (*driver.APIKey, error) {
		return nil, badRecordRow("api_keys", r.ID, format, args...)
	}
	switch {
	case r.ID == nil:
		return bad("id is null")
	case r.KDF == nil:
		return bad("kdf is null")
	case len(r.Salt) == 0 || len(r.Hash) == 0:
		return bad("salt or hash is empty")
	case r.Rate != nil && (math.IsNaN(*r.Rate) || math.IsInf(*r.Rate, 0) || *r.Rate < 0):
		return bad("rate %v", *r.Rate)
	case r.Burst != nil && *r.Burst < 0:
		return bad("burst %d", *r.Burst)
	}
	k := &driver.APIKey{ID: *r.ID, Scopes: r.Scopes, KDF: *r.KDF, Salt: r.Salt, Hash: r.Hash}
	if r.Name != nil {
		k.Name = *r.Name
	}
	if r.Rate != nil {
		k.RatePerSecond = *r.Rate
	}
	if r.Burst != nil {
		k.Burst = *r.Burst
	}
	if r.CreatedAt != nil {
		k.CreatedAt = r.CreatedAt.UTC()
	}
	return k, nil
}
