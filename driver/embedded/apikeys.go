package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// tableAPIKeys holds one plain value per API key, keyed by its ID.
const tableAPIKeys byte = 0x40

func init() { componentsPerTable[tableAPIKeys] = 1 } // key id

// apiKeyMu makes CreateAPIKey's check-then-set and DeleteAPIKey's
// check-then-delete atomic within this process; the directory lock keeps
// other processes out.
var apiKeyMu sync.Mutex

func apiKeyKey(id string) []byte { return appendComponent([]byte{tableAPIKeys}, id) }

// CreateAPIKey implements driver.APIKeys.
func (d *Driver) CreateAPIKey(ctx context.Context, p *driver.CreateAPIKeyParams) error {
	k := &p.Key
	if err := k.CheckStorable(); err != nil {
		return fmt.Errorf("embedded: create API key: %w", err)
	}
	return d.createRecord(ctx, "API key", k.ID, apiKeyKey(k.ID),
		func() ([]byte, error) { return encodeAPIKey(k), nil },
		func() func() { apiKeyMu.Lock(); return apiKeyMu.Unlock })
}

// GetAPIKey implements driver.APIKeys.
func (d *Driver) GetAPIKey(ctx context.Context, p *driver.GetAPIKeyParams) (*driver.APIKey, error) {
	return getRecord(ctx, d, "API key", p.ID, apiKeyKey(p.ID), decodeAPIKey, apiKeyID)
}

// ListAPIKeys implements driver.APIKeys.
func (d *Driver) ListAPIKeys(ctx context.Context, _ *driver.ListAPIKeysParams) ([]*driver.APIKey, error) {
	return listRecords(ctx, d, "list API keys", tableAPIKeys, func(key []byte) (string, error) {
		_, parts, err := decodeKey(key)
		if err != nil {
			return "", err
		}
		return parts[0], nil
	}, decodeAPIKey, apiKeyID)
}

// DeleteAPIKey implements driver.APIKeys.
func (d *Driver) DeleteAPIKey(ctx context.Context, p *driver.DeleteAPIKeyParams) error {
	const op = "delete API key"
	if err := d.acquire(ctx, op); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	key := apiKeyKey(p.ID)
	apiKeyMu.Lock()
	defer apiKeyMu.Unlock()
	_, closer, err := d.db.Get(key)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("embedded: API key %q: %w", p.ID, driver.ErrNotFound)
	case err != nil:
		return fmt.Errorf("embedded: %s %q: %w", op, p.ID, err)
	}
	_ = closer.Close()
	if err := d.db.Delete(key, d.writeOpts); err != nil {
		return fmt.Errorf("embedded: %s %q: %w", op, p.ID, err)
	}
	return nil
}

func apiKeyID(k *driver.APIKey) string { return k.ID }

// apiKeyVersion is the format version of an API key record.
const apiKeyVersion byte = 1

// Layout, version 1 (string and bytes: a uvarint length, then the bytes):
//
//	version          byte
//	id               string
//	name             string
//	scope count      uvarint
//	scopes           count × string
//	kdf              string
//	salt             bytes
//	hash             bytes
//	rate             float64 bits, big-endian
//	burst            uvarint
//	created_at secs  int64, Unix seconds, big-endian
//	created_at nanos uint32, big-endian, < 1e9
func encodeAPIKey(k *driver.APIKey) []byte {
	b := make([]byte, 0, 96+len(k.ID)+len(k.Name)+len(k.KDF)+len(k.Salt)+len(k.Hash))
	b = append(b, apiKeyVersion)
	b = appendString(b, k.ID)
	b = appendString(b, k.Name)
	b = binary.AppendUvarint(b, uint64(len(k.Scopes)))
	for _, s := range k.Scopes {
		b = appendString(b, s)
	}
	b = appendString(b, k.KDF)
	b = appendString(b, string(k.Salt))
	b = appendString(b, string(k.Hash))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(k.RatePerSecond))
	b = binary.AppendUvarint(b, uint64(max(k.Burst, 0)))
	b = binary.BigEndian.AppendUint64(b, uint64(k.CreatedAt.Unix()))
	b = binary.BigEndian.AppendUint32(b, uint32(k.CreatedAt.Nanosecond()))
	return b
}

func decodeAPIKey(b []byte) (*driver.APIKey, error) {
	r := newReader(b)
	if v := r.Byte("version"); r.Err == nil && v != apiKeyVersion {
		return nil, fmt.Errorf("%w: API key format version %d, this build reads only version %d", errCorrupt, v, apiKeyVersion)
	}
	k := &driver.APIKey{}
	k.ID = r.String("id")
	k.Name = r.String("name")
	count := r.Uvarint("scope count")
	if r.Err != nil {
		return nil, r.Err
	}
	// Each scope takes at least one byte, which bounds a corrupt count.
	if count > uint64(len(r.B)) {
		return nil, fmt.Errorf("%w: %d scopes cannot fit in %d bytes", errCorrupt, count, len(r.B))
	}
	k.Scopes = make([]string, 0, count)
	for range count {
		k.Scopes = append(k.Scopes, r.String("scope"))
	}
	k.KDF = r.String("kdf")
	k.Salt = []byte(r.String("salt"))
	k.Hash = []byte(r.String("hash"))
	k.RatePerSecond = math.Float64frombits(r.Uint64("rate"))
	burst := r.Uvarint("burst")
	secs := int64(r.Uint64("created_at"))
	nanos := r.Uint32("created_at")
	if r.Err != nil {
		return nil, r.Err
	}
	switch {
	case math.IsNaN(k.RatePerSecond) || math.IsInf(k.RatePerSecond, 0) || k.RatePerSecond < 0:
		return nil, fmt.Errorf("%w: rate %v", errCorrupt, k.RatePerSecond)
	case burst > driver.MaxAPIKeyBurst:
		return nil, fmt.Errorf("%w: burst %d", errCorrupt, burst)
	case nanos >= 1e9:
		return nil, fmt.Errorf("%w: created_at nanoseconds %d out of range", errCorrupt, nanos)
	case len(r.B) != 0:
		return nil, fmt.Errorf("%w: %d trailing bytes after API key record", errCorrupt, len(r.B))
	}
	k.Burst = int(burst)
	k.CreatedAt = time.Unix(secs, int64(nanos)).UTC()
	return k, nil
}
