package background

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
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

func TestShutdownStopsTheSweeperAndNamesWhatIsStillRunning(t *testing.T) {
	t.Parallel()
	var r Runner
	var logs bytes.Buffer
	swept := make(chan struct{}, 1)
	r.Sweep(time.Millisecond, slog.New(slog.NewTextHandler(&logs, nil)), "test sweep failed", func(context.Context) error {
		select {
		case swept <- struct{}{}:
		default:
		}
		return errors.New("boom")
	})
	<-swept
	release := make(chan struct{})
	r.Go(func() { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := r.Shutdown(ctx, "test: writes")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "test: writes still in flight") {
		t.Fatalf("Shutdown with work in flight: %v", err)
	}
	if !strings.Contains(logs.String(), "test sweep failed") || !strings.Contains(logs.String(), "boom") {
		t.Fatalf("a failed sweep was not logged: %q", logs.String())
	}
	close(release)
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
