package abacus_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/driver"
)

func TestLedgerNamespaceOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newMemStore(t)
	c := startClient(t, abacus.Config{Driver: store})

	const (
		day   = 24 * time.Hour
		month = 30 * day
	)
	cases := []struct {
		name string
		in   *abacus.LedgerOptions
		want abacus.LedgerOptions
	}{
		{"defaults", nil, abacus.LedgerOptions{Mode: abacus.LedgerModeExact, HistoryLength: 10, RetryCount: 10, ClaimTTL: 24 * time.Hour, EntryRetention: month, ActorMaxAge: day}},
		{"exact", &abacus.LedgerOptions{Mode: abacus.LedgerModeExact, HistoryLength: 3}, abacus.LedgerOptions{HistoryLength: 3, Mode: abacus.LedgerModeExact, RetryCount: 10, ClaimTTL: 24 * time.Hour, EntryRetention: month, ActorMaxAge: day}},
		{"may-double", &abacus.LedgerOptions{Mode: abacus.LedgerModeConcurrentRetriesMayDouble}, abacus.LedgerOptions{HistoryLength: 10, Mode: abacus.LedgerModeConcurrentRetriesMayDouble, RetryCount: 10, ClaimTTL: 24 * time.Hour, EntryRetention: month, ActorMaxAge: day}},
		{"no-retries", &abacus.LedgerOptions{RetryCount: -1, ClaimTTL: time.Hour}, abacus.LedgerOptions{Mode: abacus.LedgerModeExact, HistoryLength: 10, RetryCount: 0, ClaimTTL: time.Hour, EntryRetention: month, ActorMaxAge: day}},
		{"no-history", &abacus.LedgerOptions{EntryRetention: -1}, abacus.LedgerOptions{Mode: abacus.LedgerModeExact, HistoryLength: 10, RetryCount: 10, ClaimTTL: 24 * time.Hour, ActorMaxAge: day}},
		{"hour-history", &abacus.LedgerOptions{EntryRetention: time.Hour}, abacus.LedgerOptions{Mode: abacus.LedgerModeExact, HistoryLength: 10, RetryCount: 10, ClaimTTL: 24 * time.Hour, EntryRetention: time.Hour, ActorMaxAge: day}},
		{"hour-actors", &abacus.LedgerOptions{ActorMaxAge: time.Hour}, abacus.LedgerOptions{Mode: abacus.LedgerModeExact, HistoryLength: 10, RetryCount: 10, ClaimTTL: 24 * time.Hour, EntryRetention: month, ActorMaxAge: time.Hour}},
		// Actors that never retire by age: stored as 0, as namespaces made before folding read.
		{"no-folding", &abacus.LedgerOptions{ActorMaxAge: -1}, abacus.LedgerOptions{Mode: abacus.LedgerModeExact, HistoryLength: 10, RetryCount: 10, ClaimTTL: 24 * time.Hour, EntryRetention: month}},
	}
	for _, tc := range cases {
		ns, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "l-" + tc.name, Model: "LEDGER", Ledger: tc.in})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ns.Model != abacus.ModelLedger || ns.Ledger == nil || *ns.Ledger != tc.want {
			t.Fatalf("%s: created %+v with %+v, want %+v", tc.name, ns, ns.Ledger, tc.want)
		}
	}
	// A second client reads the stored options back, not the cached ones.
	c2 := startClient(t, abacus.Config{Driver: store})
	for _, tc := range cases {
		ns, err := c2.Namespace(ctx, "l-"+tc.name)
		if err != nil || ns.Ledger == nil || *ns.Ledger != tc.want {
			t.Fatalf("%s: stored options read back as %+v, %v; want %+v", tc.name, ns, err, tc.want)
		}
	}
	for _, bad := range []*abacus.LedgerOptions{
		{HistoryLength: 1001}, {HistoryLength: -2}, {Mode: "strict"}, {RetryCount: 101}, {ClaimTTL: time.Millisecond}, {ClaimTTL: 1500 * time.Millisecond},
		{ActorMaxAge: time.Millisecond},
	} {
		if _, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "bad", Model: abacus.ModelLedger, Ledger: bad}); !errors.Is(err, abacus.ErrInvalid) {
			t.Errorf("options %+v: got %v, want ErrInvalid", *bad, err)
		}
	}
	// Corrupt stored options are reported, not guessed at.
	err := store.CreateNamespace(ctx, &driver.CreateNamespaceParams{Namespace: driver.Namespace{
		Name: "corrupt", Model: "ledger", Options: map[string]string{"history_length": "ten"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Namespace(ctx, "corrupt"); err == nil {
		t.Fatal("a namespace with corrupt ledger options was accepted")
	}
}

func TestLedgerThroughTheClient(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()

	// The default ledger namespace appears on first use.
	r, err := c.Credit(ctx, "", "wallet", 100, "c1")
	if err != nil || !r.Applied || r.Namespace != abacus.DefaultLedgerNamespace || r.RequestID != "c1" {
		t.Fatalf("Credit = %+v, %v", r, err)
	}
	if r, err := c.Credit(ctx, "", "wallet", 100, "c1"); err != nil || !r.Applied || !r.Replayed {
		t.Fatalf("retried credit = %+v, %v; want the first answer, replayed", r, err)
	}
	if _, err := c.Debit(ctx, "", "wallet", 30, "d1"); err != nil {
		t.Fatal(err)
	}
	r, err = c.UpdateLedger(ctx, abacus.LedgerUpdate{Ledger: "wallet", Amount: -5})
	if err != nil || !r.Applied || len(r.RequestID) != 32 {
		t.Fatalf("UpdateLedger without an id = %+v, %v; want applied with a generated id", r, err)
	}
	v, err := c.LedgerValue(ctx, "", "wallet")
	if err != nil || v.Value != 65 || v.Credits != 100 || v.Debits != 35 || v.Actors != 1 {
		t.Fatalf("LedgerValue = %+v, %v", v, err)
	}
	for id, want := range map[string]bool{"c1": true, "d1": true, r.RequestID: true, "nope": false} {
		if got, err := c.HasRequestID(ctx, "", "wallet", id); err != nil || got != want {
			t.Fatalf("HasRequestID(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
	if v, err := c.FindLedger(ctx, "", "wallet"); err != nil || v.Value != 65 {
		t.Fatalf("FindLedger = %+v, %v", v, err)
	}
	if v, _ := c.LedgerValue(ctx, "", "never"); v.Value != 0 || v.Actors != 0 {
		t.Fatalf("unwritten ledger = %+v", v)
	}

	if _, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "big", Model: abacus.ModelLedger}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Credit(ctx, "big", "b", math.MaxInt64, "max"); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		call func() error
		want error
	}{
		{"zero credit", func() error { _, err := c.Credit(ctx, "", "wallet", 0, ""); return err }, abacus.ErrInvalid},
		{"negative debit", func() error { _, err := c.Debit(ctx, "", "wallet", -1, ""); return err }, abacus.ErrInvalid},
		{"zero update", func() error { _, err := c.UpdateLedger(ctx, abacus.LedgerUpdate{Ledger: "wallet"}); return err }, abacus.ErrInvalid},
		{"overflow", func() error { _, err := c.Credit(ctx, "big", "b", 1, "one"); return err }, abacus.ErrOverflow},
		{"reused id", func() error { _, err := c.Credit(ctx, "", "wallet", 99, "c1"); return err }, abacus.ErrRequestConflict},
		{"bad id", func() error { _, err := c.Credit(ctx, "", "wallet", 1, "\xff"); return err }, abacus.ErrInvalid},
		{"empty ledger name", func() error { _, err := c.Credit(ctx, "", "", 1, ""); return err }, abacus.ErrInvalid},
		{"ledger op on a counter namespace", func() error { _, err := c.Credit(ctx, abacus.DefaultNamespace, "x", 1, ""); return err }, abacus.ErrInvalid},
		{"counter op on a ledger namespace", func() error { return c.Add(ctx, abacus.DefaultLedgerNamespace, "wallet", 1) }, abacus.ErrWrongModel},
		{"missing namespace", func() error { _, err := c.Credit(ctx, "nope", "x", 1, ""); return err }, abacus.ErrNamespaceNotFound},
	}
	for _, b := range bad {
		if err := b.call(); !errors.Is(err, b.want) {
			t.Errorf("%s: got %v, want %v", b.name, err, b.want)
		}
	}
	if v, _ := c.LedgerValue(ctx, "", "wallet"); v.Value != 65 {
		t.Fatalf("refused calls changed the ledger to %d", v.Value)
	}
}

// unknownStore reports every ledger row write as timed out after applying it.
type unknownStore struct{ driver.Driver }

func (s unknownStore) WriteLedgerRow(ctx context.Context, p *driver.WriteLedgerRowParams) error {
	if err := s.Driver.WriteLedgerRow(ctx, p); err != nil {
		return err
	}
	return fmt.Errorf("injected timeout: %w", driver.ErrUnknownOutcome)
}

func TestLedgerUnknownOutcomeIsNeverSuccess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newMemStore(t)
	c := startClient(t, abacus.Config{Driver: unknownStore{store}})
	if _, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "l", Model: abacus.ModelLedger, Ledger: &abacus.LedgerOptions{RetryCount: 2}}); err != nil {
		t.Fatal(err)
	}
	r, err := c.Credit(ctx, "l", "x", 5, "")
	if !errors.Is(err, abacus.ErrUnknownOutcome) || r.RequestID == "" {
		t.Fatalf("Credit = %+v, %v; want ErrUnknownOutcome with the request id", r, err)
	}
	// The writes had landed: the retry, with the returned id, finds it.
	healthy := startClient(t, abacus.Config{Driver: store})
	if r2, err := healthy.Credit(ctx, "l", "x", 5, r.RequestID); err != nil || !r2.Applied || !r2.Replayed {
		t.Fatalf("retry = %+v, %v; want recognised", r2, err)
	}
}

// Crediting a ledger and retrying: the retry is recognised.
func ExampleClient_Credit() {
	ctx := context.Background()
	client, done := exampleClient(ctx)
	defer done()

	r, _ := client.Credit(ctx, "", "alice", 50, "order-1001")
	fmt.Println("applied:", r.Applied, "replayed:", r.Replayed)
	r, _ = client.Credit(ctx, "", "alice", 50, "order-1001") // a retry
	fmt.Println("applied:", r.Applied, "replayed:", r.Replayed)
	_, _ = client.Debit(ctx, "", "alice", 20, "refund-7")

	v, _ := client.LedgerValue(ctx, "", "alice")
	fmt.Println(v.Value)
	// Output:
	// applied: true replayed: false
	// applied: true replayed: true
	// 30
}

func TestLedgerFloor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newMemStore(t)
	c := startClient(t, abacus.Config{Driver: store})
	ns, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "wallets", Model: abacus.ModelLedger, Ledger: &abacus.LedgerOptions{Floored: true, Floor: -10}})
	if err != nil {
		t.Fatal(err)
	}
	if !ns.Ledger.Floored || ns.Ledger.Floor != -10 {
		t.Fatalf("created with %+v", ns.Ledger)
	}
	if _, err := c.Debit(ctx, "wallets", "bob", 10, "d1"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Debit(ctx, "wallets", "bob", 1, "d2")
	if !errors.Is(err, abacus.ErrBelowFloor) || !errors.Is(err, abacus.ErrNotApplied) {
		t.Fatalf("debit past the floor: %v; want ErrBelowFloor and ErrNotApplied", err)
	}
	// Another client (another process) sees the stored floor and the
	// rights the first one returns when it closes.
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	c2 := startClient(t, abacus.Config{Driver: store})
	if ns, err := c2.Namespace(ctx, "wallets"); err != nil || !ns.Ledger.Floored || ns.Ledger.Floor != -10 {
		t.Fatalf("stored options read back as %+v, %v", ns, err)
	}
	if _, err := c2.Credit(ctx, "wallets", "bob", 5, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Debit(ctx, "wallets", "bob", 5, "d3"); err != nil {
		t.Fatal(err)
	}
	if v, err := c2.LedgerValue(ctx, "wallets", "bob"); err != nil || v.Value != -10 {
		t.Fatalf("value = %+v, %v; want -10", v, err)
	}
	for _, bad := range []abacus.NamespaceConfig{
		{Name: "bad", Model: abacus.ModelLedger, Ledger: &abacus.LedgerOptions{Floored: true, Floor: 1}},
		{Name: "bad", Model: abacus.ModelLedger, Ledger: &abacus.LedgerOptions{Floor: -1}},
		{Name: "bad", Model: abacus.ModelLedger, Ledger: &abacus.LedgerOptions{Floored: true}, WriteConsistency: driver.One},
	} {
		if _, err := c2.CreateNamespace(ctx, bad); !errors.Is(err, abacus.ErrInvalid) {
			t.Errorf("%+v with %+v: %v, want ErrInvalid", bad, bad.Ledger, err)
		}
	}
}
