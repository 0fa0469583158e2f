package apikey

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver/embedded"
)

// BenchmarkKDF is one argon2id run at the default parameters: what a
// server pays once per new token (and per guess at a secret).
func BenchmarkKDF(b *testing.B) {
	secret := newToken("k").Secret
	salt, _ := defaultKDF.hashSecret(secret)
	b.ReportAllocs()
	for b.Loop() {
		defaultKDF.hash(secret, salt)
	}
}

// BenchmarkAuthenticateCached is the cost of every request after a
// token's first: a SHA-256 and a map lookup.
func BenchmarkAuthenticateCached(b *testing.B) {
	ctx := context.Background()
	d, err := embedded.Open(ctx, embedded.Config{Dir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	k := New(d, time.Hour)
	tok, _, err := k.Create(ctx, Spec{Scopes: []string{"*:read"}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := k.Authenticate(ctx, tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Authenticate(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}
