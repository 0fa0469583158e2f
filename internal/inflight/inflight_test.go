package inflight

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestCloseRefusesNewWorkAndWaitsForOld(t *testing.T) {
	t.Parallel()
	var g Group
	release := make(chan struct{})
	if !g.Go(func() { <-release }) {
		t.Fatal("an open group refused work")
	}
	g.Close()
	if g.Enter() || g.Go(func() { t.Error("ran after Close") }) {
		t.Fatal("a closed group took work")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with work in flight: %v", err)
	}
	close(release)
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
