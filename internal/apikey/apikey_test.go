package apikey

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/abacusdb/abacus/internal/outcome"
)

// countingStore is the real embedded store, counting reads so the tests
// can see when the cache answered.
type countingStore struct {
	driver.APIKeys
	gets atomic.Int64
}

func (c *countingStore) GetAPIKey(ctx context.Context, p *driver.GetAPIKeyParams) (*driver.APIKey, error) {
	c.gets.Add(1)
	return c.APIKeys.GetAPIKey(ctx, p)
}

func newKeys(t *testing.T) (*Keys, *countingStore, *time.Time) {
	t.Helper()
	d, err := embedded.Open(context.Background(), embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	store := &countingStore{APIKeys: d}
	k := New(store, time.Minute)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	k.now = func() time.Time { return now }
	return k, store, &now
}

func TestCreateAuthenticateRevoke(t *testing.T) {
	ctx := context.Background()
	k, store, now := newKeys(t)
	tok, key, err := k.Create(ctx, Spec{Name: "ci", Scopes: []string{"ns:likes:write", "queue:*:read"}, RatePerSecond: 2.5})
	if err != nil {
		t.Fatal(err)
	}
	if key.Burst != 3 {
		t.Errorf("burst defaults to a second's worth rounded up: got %d, want 3", key.Burst)
	}
	if !strings.HasPrefix(tok, "abk_"+key.ID+"_") {
		t.Fatalf("token %q does not carry its id %q", tok, key.ID)
	}
	rec, err := store.APIKeys.GetAPIKey(ctx, &driver.GetAPIKeyParams{ID: key.ID})
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := ParseToken(tok)
	if strings.Contains(string(rec.Hash), string(parsed.Secret)) || strings.Contains(string(rec.Salt), string(parsed.Secret)) {
		t.Fatal("the stored record holds the secret")
	}

	got, err := k.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != key.ID || !got.Allows(KindNamespace, "likes", Write) || got.Allows(KindNamespace, "likes", Admin) ||
		got.Allows(KindNamespace, "shares", Read) || !got.Allows(KindQueue, "anything", Read) || got.Allows(KindQueue, "anything", Write) {
		t.Fatalf("authenticated key %+v has the wrong grants", got)
	}
	gets := store.gets.Load()
	if _, err := k.Authenticate(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if store.gets.Load() != gets {
		t.Error("a token verified a moment ago was looked up again")
	}

	// A wrong secret for a real id fails, and so does an unknown id.
	wrong := Token{ID: key.ID, Secret: make([]byte, secretBytes)}.String()
	if _, err := k.Authenticate(ctx, wrong); !errors.Is(err, outcome.ErrUnauthenticated) {
		t.Fatalf("wrong secret: %v, want ErrUnauthenticated", err)
	}
	if _, err := k.Authenticate(ctx, Token{ID: "knone", Secret: parsed.Secret}.String()); !errors.Is(err, outcome.ErrUnauthenticated) {
		t.Fatalf("unknown id: %v, want ErrUnauthenticated", err)
	}
	for _, bad := range []string{"", "Bearer x", "abk_", "abk_" + key.ID, "abk_" + key.ID + "_short", tok + "x", strings.ToUpper(tok)} {
		if _, err := k.Authenticate(ctx, bad); !errors.Is(err, outcome.ErrUnauthenticated) {
			t.Errorf("Authenticate(%q) = %v, want ErrUnauthenticated", bad, err)
		}
	}

	// Revoked here: refused at once, cache or not.
	if err := k.Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Authenticate(ctx, tok); !errors.Is(err, outcome.ErrUnauthenticated) {
		t.Fatalf("after revoke: %v, want ErrUnauthenticated", err)
	}
	if err := k.Revoke(ctx, key.ID); !errors.Is(err, outcome.ErrKeyNotFound) {
		t.Fatalf("second revoke: %v, want ErrKeyNotFound", err)
	}
	_ = now
}

func TestRevokedOnAnotherServerStopsWithinTheCacheTTL(t *testing.T) {
	ctx := context.Background()
	here, store, now := newKeys(t)
	there := New(store.APIKeys, time.Minute) // another server, same store
	tok, key, err := there.Create(ctx, Spec{Scopes: []string{"*:read"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := here.Authenticate(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := there.Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	// Within the TTL this server may still accept it (documented) ...
	if _, err := here.Authenticate(ctx, tok); err != nil {
		t.Fatalf("within the cache TTL: %v", err)
	}
	// ... and after it, never.
	*now = now.Add(time.Minute)
	if _, err := here.Authenticate(ctx, tok); !errors.Is(err, outcome.ErrUnauthenticated) {
		t.Fatalf("a cache TTL after the revocation: %v, want ErrUnauthenticated", err)
	}
}

func TestFirstAdminIsMadeOnceAndOnlyIntoAnEmptyStore(t *testing.T) {
	ctx := context.Background()
	k, _, _ := newKeys(t)
	tok, created, err := k.CreateFirstAdmin(ctx)
	if err != nil || !created || tok == "" {
		t.Fatalf("first start: %q, %v, %v", tok, created, err)
	}
	key, err := k.Authenticate(ctx, tok)
	if err != nil || key.ID != FirstAdminID || !key.Allows("*", "", Admin) {
		t.Fatalf("first admin key: %+v, %v", key, err)
	}
	if tok2, created, err := k.CreateFirstAdmin(ctx); err != nil || created || tok2 != "" {
		t.Fatalf("second start: %q, %v, %v; want nothing made", tok2, created, err)
	}
	// Revoking the first key while another remains must not bring it back.
	if _, _, err := k.Create(ctx, Spec{Scopes: []string{"*:admin"}}); err != nil {
		t.Fatal(err)
	}
	if err := k.Revoke(ctx, FirstAdminID); err != nil {
		t.Fatal(err)
	}
	if _, created, err := k.CreateFirstAdmin(ctx); err != nil || created {
		t.Fatalf("with another key present: created %v, %v", created, err)
	}
}

func TestCreateRefusesBadSpecs(t *testing.T) {
	k, _, _ := newKeys(t)
	for _, s := range []Spec{
		{},
		{Scopes: []string{"likes:write"}},
		{Scopes: []string{"ns:likes:owner"}},
		{Scopes: []string{"ns::read"}},
		{Scopes: []string{"*:read"}, RatePerSecond: -1},
		{Scopes: []string{"*:read"}, Burst: 5},
		{Scopes: []string{"*:read"}, Name: strings.Repeat("n", 257)},
	} {
		if _, _, err := k.Create(context.Background(), s); !errors.Is(err, outcome.ErrInvalid) {
			t.Errorf("Create(%+v) = %v, want ErrInvalid", s, err)
		}
	}
}

// The API fuzzer found this: a rate_limit of 3e16 with no burst made a
// default burst of 3e16, which the embedded store wrote and then could not
// read, so every later list of keys failed.
func TestHugeRateGetsABurstTheStoreKeeps(t *testing.T) {
	k, _, _ := newKeys(t)
	ctx := context.Background()
	_, key, err := k.Create(ctx, Spec{Scopes: []string{"*:read"}, RatePerSecond: 30180155108310024})
	if err != nil {
		t.Fatal(err)
	}
	if key.Burst != driver.MaxAPIKeyBurst {
		t.Fatalf("burst = %d, want %d (one second's worth, capped)", key.Burst, driver.MaxAPIKeyBurst)
	}
	all, err := k.List(ctx)
	if err != nil {
		t.Fatalf("List after creating the key: %v", err)
	}
	if len(all) != 1 || all[0].Burst != driver.MaxAPIKeyBurst {
		t.Fatalf("List = %+v, want the one key with burst %d", all, driver.MaxAPIKeyBurst)
	}
}

func TestScopes(t *testing.T) {
	for _, c := range []struct {
		scope string
		kind  string
		name  string
		role  Role
		want  bool
	}{
		{"*:admin", KindNamespace, "x", Admin, true},
		{"*:read", KindQueue, "x", Write, false},
		{"ns:*:write", KindNamespace, "any", Read, true},
		{"ns:*:write", KindQueue, "any", Read, false},
		{"ns:a:b:write", KindNamespace, "a:b", Write, true},
		{"ns:a:b:write", KindNamespace, "a", Write, false},
		{"queue:jobs:write", KindQueue, "jobs", Admin, false},
		{"queue:jobs:admin", KindQueue, "jobs", Read, true},
	} {
		g, err := ParseScope(c.scope)
		if err != nil {
			t.Fatalf("ParseScope(%q): %v", c.scope, err)
		}
		if g.String() != c.scope {
			t.Errorf("ParseScope(%q).String() = %q", c.scope, g.String())
		}
		if got := g.covers(c.kind, c.name, c.role); got != c.want {
			t.Errorf("%q covers %s %q %v = %v, want %v", c.scope, c.kind, c.name, c.role, got, c.want)
		}
	}
}

func TestKDFParametersAreBounded(t *testing.T) {
	if _, err := parseKDF(defaultKDF.String()); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"", "bcrypt", "argon2id;v=19;m=4194304;t=2;p=1", "argon2id;v=19;m=19456;t=99;p=1", "argon2id;v=19;m=019456;t=2;p=1", "argon2id;v=18;m=19456;t=2;p=1"} {
		if _, err := parseKDF(s); err == nil {
			t.Errorf("parseKDF(%q) accepted", s)
		}
	}
}

// FuzzParseToken checks that the token parser, which reads what anyone
// sends in an Authorization header, refuses or round-trips every input.
func FuzzParseToken(f *testing.F) {
	f.Add(newToken("first-admin").String())
	f.Add(newToken("k0123456789abcdef").String())
	f.Add("abk__")
	f.Add("abk_a_" + strings.Repeat("A", 43))
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseToken(s)
		if err != nil {
			return
		}
		if tok.String() != s {
			t.Fatalf("ParseToken(%q) = %+v, which prints as %q", s, tok, tok.String())
		}
	})
}

// FuzzParseScope checks that whatever parses prints back the same.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"*:admin", "ns:likes:write", "queue:*:read", "ns:a:b:read", "ns::read", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseScope(s)
		if err != nil {
			return
		}
		if g.String() != s {
			t.Fatalf("ParseScope(%q) = %+v, which prints as %q", s, g, g.String())
		}
	})
}

// revokeDuringGet is the real store, revoking a key through keys between
// Authenticate's read of its record and the end of that read.
type revokeDuringGet struct {
	driver.APIKeys
	keys *Keys
	id   string
	once bool
}

func (r *revokeDuringGet) GetAPIKey(ctx context.Context, p *driver.GetAPIKeyParams) (*driver.APIKey, error) {
	rec, err := r.APIKeys.GetAPIKey(ctx, p)
	if !r.once && p.ID == r.id {
		r.once = true
		if err := r.keys.Revoke(ctx, r.id); err != nil {
			return nil, err
		}
	}
	return rec, err
}

// A revoke that lands while Authenticate reads the key's record must not
// leave the record it read in the cache: on the server that revoked the
// key, the key stops working at once.
func TestRevokeDuringAuthenticateIsNotUndone(t *testing.T) {
	ctx := context.Background()
	d, err := embedded.Open(ctx, embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	store := &revokeDuringGet{APIKeys: d}
	k := New(store, time.Minute)
	store.keys = k
	tok, key, err := k.Create(ctx, Spec{Scopes: []string{"*:read"}})
	if err != nil {
		t.Fatal(err)
	}
	store.id = key.ID
	if _, err := k.Authenticate(ctx, tok); !errors.Is(err, outcome.ErrUnauthenticated) {
		t.Fatalf("a key revoked during its first check: %v, want ErrUnauthenticated", err)
	}
	if _, err := k.Authenticate(ctx, tok); !errors.Is(err, outcome.ErrUnauthenticated) {
		t.Fatalf("the same key checked again: %v, want ErrUnauthenticated", err)
	}
}

// While both hashing slots are taken, a new token waits at most kdfWait
// and is then refused with ErrBusy (the server answers 503): a flood of
// wrong secrets cannot queue good tokens behind it for ever.
func TestNewTokensDoNotQueueForeverForTheKDF(t *testing.T) {
	ctx := context.Background()
	k, _, _ := newKeys(t)
	tok, _, err := k.Create(ctx, Spec{Scopes: []string{"*:read"}})
	if err != nil {
		t.Fatal(err)
	}
	for range cap(k.kdfSlots) {
		k.kdfSlots <- struct{}{}
	}
	start := time.Now()
	if _, err := k.Authenticate(ctx, tok); !errors.Is(err, ErrBusy) {
		t.Fatalf("with every slot taken: %v, want ErrBusy", err)
	}
	if waited := time.Since(start); waited < kdfWait/2 {
		t.Fatalf("refused after %v, before waiting for a slot", waited)
	}
	<-k.kdfSlots
	if _, err := k.Authenticate(ctx, tok); err != nil {
		t.Fatalf("with a slot free: %v", err)
	}
}

func TestMetricsScope(t *testing.T) {
	g, err := ParseScope("metrics:read")
	if err != nil || !g.covers(KindMetrics, "", Read) || g.covers(KindNamespace, "x", Read) {
		t.Fatalf("metrics:read = %+v, %v", g, err)
	}
	for _, bad := range []string{"metrics:write", "metrics:admin", "metrics:x:read"} {
		if _, err := ParseScope(bad); err == nil {
			t.Errorf("ParseScope(%q) accepted", bad)
		}
	}
	if g, _ := ParseScope("*:read"); !g.covers(KindMetrics, "", Read) {
		t.Error("*:read does not cover the metrics")
	}
}
