package embedded

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// checkSeedCorpus keeps hand-written fuzz seeds honest: of the files in
// testdata/fuzz/<target>, those named valid-* must decode and those named
// bad-* must not, and at least minChecked of them must be there. Each file
// must be a go test fuzz v1 file of arity[target] []byte arguments (one
// when the target is not in arity); decode gets the file's name and them.
func checkSeedCorpus(t *testing.T, decoders map[string]func(name string, args [][]byte) error, arity map[string]int, minChecked int) {
	t.Helper()
	checked := 0
	for target, decode := range decoders {
		files, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*-*"))
		if err != nil {
			t.Fatal(err)
		}
		n, ok := arity[target]
		if !ok {
			n = 1
		}
		for _, file := range files {
			name := filepath.Base(file)
			valid := strings.HasPrefix(name, "valid-")
			if !valid && !strings.HasPrefix(name, "bad-") {
				continue
			}
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			if len(lines) != 1+n || lines[0] != "go test fuzz v1" {
				t.Fatalf("%s: not a go test fuzz v1 file with %d arguments", file, n)
			}
			var args [][]byte
			for _, l := range lines[1:] {
				if !strings.HasPrefix(l, "[]byte(") || !strings.HasSuffix(l, ")") {
					t.Fatalf("%s: argument %q is not a []byte", file, l)
				}
				b, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(l, "[]byte("), ")"))
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				args = append(args, []byte(b))
			}
			if err := decode(name, args); (err == nil) != valid {
				t.Errorf("%s: decode error = %v", file, err)
			}
			checked++
		}
	}
	if checked < minChecked {
		t.Errorf("checked only %d named seed files", checked)
	}
}

// oneArg adapts a decoder of one argument to checkSeedCorpus.
func oneArg(decode func([]byte) error) func(string, [][]byte) error {
	return func(_ string, args [][]byte) error { return decode(args[0]) }
}
