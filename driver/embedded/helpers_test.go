package embedded

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2/vfs"
)

var quiet = slog.New(slog.DiscardHandler)

// open opens a driver with cfg (Logger defaulting to a silent one) and closes
// it when the test ends unless the test closed it already.
func open(t testing.TB, cfg Config) *Driver {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	d, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil && !errors.Is(err, driver.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

func openMem(t testing.TB) *Driver {
	t.Helper()
	return open(t, Config{FS: vfs.NewMem()})
}

func mustWrite(t testing.TB, d *Driver, ns, counter, id string, state []byte, expires, ts int64) {
	t.Helper()
	err := d.WriteShard(context.Background(), &driver.WriteShardParams{
		Namespace: ns, Counter: counter, Timestamp: ts,
		Shard: driver.Shard{ID: id, State: state, ExpiresAt: expires},
	})
	if err != nil {
		t.Fatalf("WriteShard(%s/%s/%s @%d): %v", ns, counter, id, ts, err)
	}
}

func mustFold(t testing.TB, d *Driver, ns, counter string, del []string, tally []byte, ts int64) {
	t.Helper()
	err := d.Fold(context.Background(), &driver.FoldParams{
		Namespace: ns, Counter: counter, Delete: del,
		Tally: driver.Tally{State: tally, Timestamp: ts},
	})
	if err != nil {
		t.Fatalf("Fold(%s/%s %v @%d): %v", ns, counter, del, ts, err)
	}
}

func mustRead(t testing.TB, d *Driver, ns, counter string) *driver.ShardSet {
	t.Helper()
	set, err := d.ReadShards(context.Background(), &driver.ReadShardsParams{Namespace: ns, Counter: counter})
	if err != nil {
		t.Fatalf("ReadShards(%s/%s): %v", ns, counter, err)
	}
	return set
}
