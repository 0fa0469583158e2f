package background

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCloseRefusesNewWorkAndWaitsForOld(t *testing.T) {
	t.Parallel()
	var g Work
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

func TestShutdownNamesWhatIsStillRunning(t *testing.T) {
	t.Parallel()
	var w Work
	release := make(chan struct{})
	w.Go(func() { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := w.Shutdown(ctx, "test: writes")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "test: writes still in flight") {
		t.Fatalf("Shutdown with work in flight: %v", err)
	}
	if w.Enter() {
		t.Fatal("a shut down group took work")
	}
	close(release)
	if err := w.Shutdown(context.Background(), "test: writes"); err != nil {
		t.Fatal(err)
	}
}
