package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/outcome"
)

// lostPuts is a store whose puts time out after the write may have landed.
type lostPuts struct{ driver.Queues }

func (lostPuts) PutMessages(context.Context, *driver.PutMessagesParams) error {
	return fmt.Errorf("test store: put timed out: %w", driver.ErrUnknownOutcome)
}

// A put whose outcome the driver could not learn matches the one
// ErrUnknownOutcome the root package re-exports, and still the driver's.
func TestUnknownOutcomeIsTheOutcomeVocabularys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, err := New(Config{Store: lostPuts{embeddedStore(t)}, Clock: clock.NewManual(start), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, QueueConfig{Name: "q", Shards: 4}); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Put(ctx, "q", Message{Body: []byte("x")})
	if !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, outcome.ErrUnknownOutcome) || !errors.Is(err, driver.ErrUnknownOutcome) {
		t.Fatalf("Put = %v; want it to match ErrUnknownOutcome and driver.ErrUnknownOutcome", err)
	}
	if _, err := svc.Put(ctx, "nope", Message{Body: []byte("x")}); errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("a put to a missing queue = %v; it changed nothing and must not match ErrUnknownOutcome", err)
	}
}
