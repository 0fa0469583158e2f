package apikey

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/outcome"
	"github.com/abacusdb/abacus/internal/randomid"
)

// FirstAdminID is the ID of the admin key made at first start. A fixed ID
// makes its creation a create-once: of several servers starting at once on
// one Cassandra keyspace, exactly one makes it (and prints it).
const FirstAdminID = "first-admin"

// DefaultCacheTTL is how long a verified token is trusted before its
// record is read again, and so how late a revocation made on another
// server may take effect here.
const DefaultCacheTTL = 10 * time.Second

// maxNameLen bounds a key's label.
const maxNameLen = 256

// Key is an API key as the server knows it: never its secret.
type Key struct {
	ID            string
	Name          string
	Scopes        []string
	Grants        []Grant
	RatePerSecond float64
	Burst         int
	CreatedAt     time.Time
}

// Allows reports whether the key may act with role on the resource.
func (k *Key) Allows(kind, name string, role Role) bool {
	for _, g := range k.Grants {
		if g.covers(kind, name, role) {
			return true
		}
	}
	return false
}

// Spec describes a key to create.
type Spec struct {
	// Name labels the key; optional, at most 256 bytes of UTF-8.
	Name string
	// Scopes are its grants (ParseScope); at least one.
	Scopes []string
	// RatePerSecond limits its requests on each server; zero: no limit.
	// Burst is how many may come at once; zero with a rate: one second's worth.
	RatePerSecond float64
	Burst         int
}

// Keys creates, lists, revokes and authenticates API keys.
type Keys struct {
	store    driver.APIKeys
	kdf      kdfParams
	cacheTTL time.Duration
	now      func() time.Time

	// kdfSlots bounds concurrent hashing: each run holds 19 MiB and a core
	// for tens of milliseconds, and tokens with a known ID and a wrong
	// secret (anyone can send them) would otherwise pile runs up.
	kdfSlots chan struct{}

	mu       sync.Mutex
	verified map[[sha256.Size]byte]cachedKey // by the token's SHA-256
	failed   map[[sha256.Size]byte]time.Time // tokens whose secret was wrong
	// revocations counts Revoke calls. Authenticate reads it before it
	// reads a key's record and caches its answer only if no revocation
	// came in between: a record read just before a revoke deleted it must
	// not outlive the revoke in the cache.
	revocations uint64
}

type cachedKey struct {
	key  *Key
	hash []byte // the stored hash it was verified against
	at   time.Time
}

// maxCached bounds both caches; when one is full it is emptied, which
// costs a KDF run per live token and nothing else.
const maxCached = 10_000

// New returns Keys over store. cacheTTL ≤ 0 means DefaultCacheTTL.
func New(store driver.APIKeys, cacheTTL time.Duration) *Keys {
	if cacheTTL <= 0 {
		cacheTTL = DefaultCacheTTL
	}
	return &Keys{
		store: store, kdf: defaultKDF, cacheTTL: cacheTTL, now: time.Now,
		kdfSlots: make(chan struct{}, 2),
		verified: map[[sha256.Size]byte]cachedKey{},
		failed:   map[[sha256.Size]byte]time.Time{},
	}
}

func (s Spec) check() ([]Grant, error) {
	if len(s.Name) > maxNameLen || !utf8.ValidString(s.Name) {
		return nil, fmt.Errorf("%w: a key name is at most %d bytes of UTF-8", outcome.ErrInvalid, maxNameLen)
	}
	if math.IsNaN(s.RatePerSecond) || math.IsInf(s.RatePerSecond, 0) || s.RatePerSecond < 0 {
		return nil, fmt.Errorf("%w: rate_limit %v must be a finite number ≥ 0", outcome.ErrInvalid, s.RatePerSecond)
	}
	if s.Burst < 0 || s.Burst > driver.MaxAPIKeyBurst || (s.Burst > 0 && s.RatePerSecond == 0) {
		return nil, fmt.Errorf("%w: burst %d needs a rate_limit and must be 0 to %d", outcome.ErrInvalid, s.Burst, driver.MaxAPIKeyBurst)
	}
	grants, err := ParseScopes(s.Scopes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", outcome.ErrInvalid, err)
	}
	return grants, nil
}

// Create makes a key and returns its token, which exists nowhere else:
// the store keeps only its hash.
func (k *Keys) Create(ctx context.Context, s Spec) (string, *Key, error) {
	return k.create(ctx, "k"+randomid.Hex(8), s)
}

func (k *Keys) create(ctx context.Context, id string, s Spec) (string, *Key, error) {
	grants, err := s.check()
	if err != nil {
		return "", nil, err
	}
	if s.RatePerSecond > 0 && s.Burst == 0 {
		// One second's worth, but no more than a store keeps: a rate of
		// 1e16/s is legal and must not make a burst no store can hold.
		s.Burst = int(min(max(1, math.Ceil(s.RatePerSecond)), driver.MaxAPIKeyBurst))
	}
	tok := newToken(id)
	salt, hash := k.kdf.hashSecret(tok.Secret)
	rec := driver.APIKey{
		ID: id, Name: s.Name, Scopes: append([]string(nil), s.Scopes...),
		KDF: k.kdf.String(), Salt: salt, Hash: hash,
		RatePerSecond: s.RatePerSecond, Burst: s.Burst,
		CreatedAt: k.now().UTC().Truncate(time.Millisecond),
	}
	if err := k.store.CreateAPIKey(ctx, &driver.CreateAPIKeyParams{Key: rec}); err != nil {
		return "", nil, err
	}
	return tok.String(), &Key{
		ID: id, Name: s.Name, Scopes: rec.Scopes, Grants: grants,
		RatePerSecond: s.RatePerSecond, Burst: s.Burst, CreatedAt: rec.CreatedAt,
	}, nil
}

// Empty reports whether the store holds no keys at all.
func (k *Keys) Empty(ctx context.Context) (bool, error) {
	all, err := k.store.ListAPIKeys(ctx, &driver.ListAPIKeysParams{})
	return len(all) == 0, err
}

// CreateFirstAdmin makes the "*:admin" key FirstAdminID when the store has
// no keys at all, and returns its token; created is false (and the token
// empty) when there were keys already or another process made it first.
func (k *Keys) CreateFirstAdmin(ctx context.Context) (token string, created bool, err error) {
	if empty, err := k.Empty(ctx); err != nil || !empty {
		return "", false, err
	}
	tok, _, err := k.create(ctx, FirstAdminID, Spec{Name: "made at first start", Scopes: []string{"*:admin"}})
	if errors.Is(err, driver.ErrExists) {
		return "", false, nil
	}
	return tok, err == nil, err
}

// List returns every key, sorted by ID. A stored scope this build cannot
// parse is left out of Grants (the key can do less, never more) and kept
// in Scopes so that an operator sees it.
func (k *Keys) List(ctx context.Context) ([]*Key, error) {
	recs, err := k.store.ListAPIKeys(ctx, &driver.ListAPIKeysParams{})
	if err != nil {
		return nil, err
	}
	out := make([]*Key, 0, len(recs))
	for _, r := range recs {
		out = append(out, fromRecord(r))
	}
	return out, nil
}

func fromRecord(r *driver.APIKey) *Key {
	key := &Key{ID: r.ID, Name: r.Name, Scopes: r.Scopes, RatePerSecond: r.RatePerSecond, Burst: r.Burst, CreatedAt: r.CreatedAt}
	for _, s := range r.Scopes {
		if g, err := ParseScope(s); err == nil {
			key.Grants = append(key.Grants, g)
		}
	}
	return key
}

// Revoke deletes the key. Tokens of it stop working here at once and on
// other servers within the cache TTL.
func (k *Keys) Revoke(ctx context.Context, id string) error {
	if err := CheckID(id); err != nil {
		return fmt.Errorf("%w: %w", outcome.ErrInvalid, err)
	}
	k.mu.Lock()
	k.revocations++
	k.mu.Unlock()
	err := k.store.DeleteAPIKey(ctx, &driver.DeleteAPIKeyParams{ID: id})
	k.mu.Lock()
	k.revocations++
	for h, c := range k.verified {
		if c.key.ID == id {
			delete(k.verified, h)
		}
	}
	k.mu.Unlock()
	if errors.Is(err, driver.ErrNotFound) {
		return fmt.Errorf("%w: %q", outcome.ErrKeyNotFound, id)
	}
	return err
}

// Authenticate returns the key a token belongs to. Its errors wrap
// outcome.ErrUnauthenticated when the token is malformed, unknown, revoked
// or wrong; any other error (the store unreachable) means the answer is
// not known, and the request must not be served.
func (k *Keys) Authenticate(ctx context.Context, token string) (*Key, error) {
	tok, err := ParseToken(token)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", outcome.ErrUnauthenticated, err)
	}
	sum := sha256.Sum256([]byte(token))
	now := k.now()
	k.mu.Lock()
	c, hit := k.verified[sum]
	failedAt, failed := k.failed[sum]
	revocations := k.revocations
	k.mu.Unlock()
	if hit && now.Sub(c.at) < k.cacheTTL {
		return c.key, nil
	}
	if failed && now.Sub(failedAt) < k.cacheTTL {
		return nil, fmt.Errorf("%w: wrong secret for key %q", outcome.ErrUnauthenticated, tok.ID)
	}
	rec, err := k.store.GetAPIKey(ctx, &driver.GetAPIKeyParams{ID: tok.ID})
	if errors.Is(err, driver.ErrNotFound) {
		return nil, fmt.Errorf("%w: no key %q (revoked, or never made)", outcome.ErrUnauthenticated, tok.ID)
	}
	if err != nil {
		return nil, err
	}
	// A token verified before against this very hash needs no new KDF
	// run: the record is still there, and unchanged.
	if !(hit && string(c.hash) == string(rec.Hash)) {
		ok, err := k.verifySlot(ctx, rec, tok.Secret)
		if err != nil {
			return nil, err
		}
		if !ok {
			k.remember(k.failed, sum, now)
			return nil, fmt.Errorf("%w: wrong secret for key %q", outcome.ErrUnauthenticated, tok.ID)
		}
	}
	key := fromRecord(rec)
	k.mu.Lock()
	raced := k.revocations != revocations
	if !raced {
		if len(k.verified) >= maxCached {
			clear(k.verified)
		}
		k.verified[sum] = cachedKey{key: key, hash: rec.Hash, at: now}
	}
	k.mu.Unlock()
	if raced {
		// A revoke ran while the record was read: read it again, now that
		// the revoke's delete is done.
		if _, err := k.store.GetAPIKey(ctx, &driver.GetAPIKeyParams{ID: tok.ID}); err != nil {
			if errors.Is(err, driver.ErrNotFound) {
				return nil, fmt.Errorf("%w: key %q was revoked", outcome.ErrUnauthenticated, tok.ID)
			}
			return nil, err
		}
	}
	return key, nil
}

// ErrBusy means every hashing slot stayed taken for kdfWait: the server
// is checking as many new tokens as it can (perhaps someone is guessing
// secrets). Nothing was done; a retry may pass.
var ErrBusy = errors.New("too many API keys are being checked at once")

// kdfWait is how long a new token waits for a hashing slot. A flood of
// wrong secrets then costs its senders a refusal within a second, rather
// than a queue that delays every new, good token behind it.
const kdfWait = time.Second

func (k *Keys) verifySlot(ctx context.Context, rec *driver.APIKey, secret []byte) (bool, error) {
	t := time.NewTimer(kdfWait)
	defer t.Stop()
	select {
	case k.kdfSlots <- struct{}{}:
	case <-t.C:
		return false, ErrBusy
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-k.kdfSlots }()
	ok, err := verify(rec.KDF, rec.Salt, rec.Hash, secret)
	if err != nil {
		// A record this build cannot verify authenticates nobody.
		return false, nil
	}
	return ok, nil
}

func (k *Keys) remember(m map[[sha256.Size]byte]time.Time, sum [sha256.Size]byte, at time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(m) >= maxCached {
		clear(m)
	}
	m[sum] = at
}
