package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestName(t *testing.T) {
	t.Parallel()
	if got := openMem(t).Name(); got != "embedded" {
		t.Errorf("Name() = %q", got)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"dir required on disk", Config{}, "Dir is required"},
		{"negative cache", Config{FS: vfs.NewMem(), CacheSize: -1}, "CacheSize"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := Open(context.Background(), tc.cfg)
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestOpenCanceledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Open(ctx, Config{FS: vfs.NewMem()}); !errors.Is(err, context.Canceled) {
		t.Errorf("Open with a canceled context: %v", err)
	}
	d := openMem(t)
	err := d.WriteShard(ctx, &driver.WriteShardParams{Namespace: "n", Counter: "c", Shard: driver.Shard{ID: "m"}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("WriteShard with a canceled context: %v", err)
	}
}

// TestClosed checks that every operation, and a second Close, reports
// ErrClosed rather than reaching the closed Pebble DB (which panics).
func TestClosed(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	ops := map[string]func() error{
		"WriteShard": func() error {
			return d.WriteShard(ctx, &driver.WriteShardParams{Namespace: "n", Counter: "c", Shard: driver.Shard{ID: "m"}})
		},
		"ReadShards": func() error {
			_, err := d.ReadShards(ctx, &driver.ReadShardsParams{Namespace: "n", Counter: "c"})
			return err
		},
		"Fold": func() error { return d.Fold(ctx, &driver.FoldParams{Namespace: "n", Counter: "c"}) },
		"ListCounters": func() error {
			_, err := d.ListCounters(ctx, &driver.ListCountersParams{})
			return err
		},
		"CreateNamespace": func() error {
			return d.CreateNamespace(ctx, &driver.CreateNamespaceParams{Namespace: driver.Namespace{Name: "n"}})
		},
		"GetNamespace": func() error {
			_, err := d.GetNamespace(ctx, &driver.GetNamespaceParams{Name: "n"})
			return err
		},
		"ListNamespaces": func() error {
			_, err := d.ListNamespaces(ctx, &driver.ListNamespacesParams{})
			return err
		},
		"Close": d.Close,
	}
	for name, f := range ops {
		if err := f(); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestCloseWaitsForOperations races operations against Close; none may
// panic, and each either succeeds or reports ErrClosed.
func TestCloseWaitsForOperations(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	errs := make(chan error, 64)
	for i := range cap(errs) {
		go func() {
			if i%2 == 0 {
				errs <- d.WriteShard(context.Background(), &driver.WriteShardParams{
					Namespace: "n", Counter: "c", Timestamp: int64(i), Shard: driver.Shard{ID: fmt.Sprint(i), ExpiresAt: 1000},
				})
			} else {
				_, err := d.ReadShards(context.Background(), &driver.ReadShardsParams{Namespace: "n", Counter: "c"})
				errs <- err
			}
		}()
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for range cap(errs) {
		if err := <-errs; err != nil && !errors.Is(err, driver.ErrClosed) {
			t.Errorf("operation racing Close: %v", err)
		}
	}
}

func TestReadShardsSortedAndSkipsTombstones(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	// Length-prefixed keys store "b" and "c" before "aa"; the result must
	// still be sorted by ID.
	for _, id := range []string{"c", "aa", "b", "gone", "a"} {
		mustWrite(t, d, "n", "c", id, []byte(id), 100, 1)
	}
	mustFold(t, d, "n", "c", []string{"gone"}, []byte("T"), 2)
	set := mustRead(t, d, "n", "c")
	var ids []string
	for _, s := range set.Shards {
		ids = append(ids, s.ID)
	}
	if want := []string{"a", "aa", "b", "c"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("IDs = %v, want %v", ids, want)
	}
	if set.Tally == nil || string(set.Tally.State) != "T" || set.Tally.Timestamp != 2 {
		t.Errorf("tally = %+v", set.Tally)
	}
}

func TestReadShardsReturnsOwnedState(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	for i := range 50 {
		mustWrite(t, d, "n", "c", fmt.Sprintf("m%02d", i), bytes.Repeat([]byte{byte(i)}, 32), 100, 1)
	}
	set := mustRead(t, d, "n", "c")
	// More writes and a read must not disturb the slices already returned.
	for i := range 50 {
		mustWrite(t, d, "n", "c", fmt.Sprintf("m%02d", i), bytes.Repeat([]byte{0xee}, 32), 100, 2)
	}
	_ = mustRead(t, d, "n", "c")
	for i, s := range set.Shards {
		if !bytes.Equal(s.State, bytes.Repeat([]byte{byte(i)}, 32)) {
			t.Fatalf("shard %s state changed under the caller: %x", s.ID, s.State)
		}
	}
}

func TestListCounters(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	ctx := context.Background()
	mustWrite(t, d, "a", "bc", "m", nil, 100, 1)
	mustWrite(t, d, "a", "bc", "m2", nil, 100, 1)
	mustWrite(t, d, "ab", "c", "m", nil, 100, 1)
	mustWrite(t, d, "a", "gone", "m", nil, 100, 1)
	mustFold(t, d, "a", "gone", []string{"m"}, nil, 2) // keeps a tally, so listed
	mustWrite(t, d, "a", "dead", "m", nil, 100, 5)
	mustFold(t, d, "a", "dead", []string{"m"}, nil, 2) // older fold: shard lives
	mustFold(t, d, "b", "tallyonly", nil, []byte("T"), 9)

	cases := []struct {
		ns   string
		want []driver.CounterKey
	}{
		{"a", []driver.CounterKey{{Namespace: "a", Counter: "bc"}, {Namespace: "a", Counter: "dead"}, {Namespace: "a", Counter: "gone"}}},
		{"ab", []driver.CounterKey{{Namespace: "ab", Counter: "c"}}},
		{"b", []driver.CounterKey{{Namespace: "b", Counter: "tallyonly"}}},
		{"none", nil},
		{"", []driver.CounterKey{
			{Namespace: "a", Counter: "bc"}, {Namespace: "a", Counter: "dead"}, {Namespace: "a", Counter: "gone"},
			{Namespace: "ab", Counter: "c"}, {Namespace: "b", Counter: "tallyonly"},
		}},
	}
	for _, tc := range cases {
		got, err := d.ListCounters(ctx, &driver.ListCountersParams{Namespace: tc.ns})
		if err != nil {
			t.Fatalf("ListCounters(%q): %v", tc.ns, err)
		}
		if len(got) != 0 || len(tc.want) != 0 {
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ListCounters(%q) = %v, want %v", tc.ns, got, tc.want)
			}
		}
	}
}

func TestNamespaces(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	ctx := context.Background()
	for _, name := range []string{"zz", "b", "default", "a", "aaa"} {
		ns := driver.Namespace{Name: name, Model: "sharded", Type: "sum", CreatedAt: time.Unix(1, 0).UTC()}
		if err := d.CreateNamespace(ctx, &driver.CreateNamespaceParams{Namespace: ns}); err != nil {
			t.Fatalf("CreateNamespace(%s): %v", name, err)
		}
	}
	err := d.CreateNamespace(ctx, &driver.CreateNamespaceParams{Namespace: driver.Namespace{Name: "b", Model: "events"}})
	if !errors.Is(err, driver.ErrExists) {
		t.Errorf("second create: %v, want ErrExists", err)
	}
	if _, err := d.GetNamespace(ctx, &driver.GetNamespaceParams{Name: "missing"}); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("GetNamespace(missing): %v, want ErrNotFound", err)
	}
	got, err := d.GetNamespace(ctx, &driver.GetNamespaceParams{Name: "b"})
	if err != nil || got.Model != "sharded" {
		t.Errorf("GetNamespace(b) = %+v, %v; the first create must win", got, err)
	}
	list, err := d.ListNamespaces(ctx, &driver.ListNamespacesParams{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range list {
		names = append(names, ns.Name)
	}
	if want := []string{"a", "aaa", "b", "default", "zz"}; !reflect.DeepEqual(names, want) {
		t.Errorf("ListNamespaces = %v, want %v", names, want)
	}
}

// TestPersistence closes and reopens a store on a real directory and wants
// every cell back, tombstones included.
func TestPersistence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()

	d := open(t, Config{Dir: dir})
	mustWrite(t, d, "n", "c", "live", []byte("L"), 100, 10)
	mustWrite(t, d, "n", "c", "folded", []byte("F"), 100, 10)
	mustFold(t, d, "n", "c", []string{"folded"}, []byte("T"), 50)
	ns := driver.Namespace{Name: "n", Model: "sharded", Type: "max", Options: map[string]string{"k": "v"}, CreatedAt: time.Unix(5, 6).UTC()}
	if err := d.CreateNamespace(ctx, &driver.CreateNamespaceParams{Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d = open(t, Config{Dir: dir})
	// A late write older than the fold must still lose after the restart.
	mustWrite(t, d, "n", "c", "folded", []byte("late"), 100, 49)
	set := mustRead(t, d, "n", "c")
	if len(set.Shards) != 1 || set.Shards[0].ID != "live" || string(set.Shards[0].State) != "L" || set.Shards[0].ExpiresAt != 100 {
		t.Errorf("shards after reopen = %+v", set.Shards)
	}
	if set.Tally == nil || string(set.Tally.State) != "T" || set.Tally.Timestamp != 50 {
		t.Errorf("tally after reopen = %+v", set.Tally)
	}
	got, err := d.GetNamespace(ctx, &driver.GetNamespaceParams{Name: "n"})
	if err != nil || !reflect.DeepEqual(*got, ns) {
		t.Errorf("namespace after reopen = %+v, %v; want %+v", got, err, ns)
	}
}

// TestSyncedWritesSurviveCrash simulates a machine crash (only fsynced data
// survives) right after writes return. With the default config every
// acknowledged write must be there; with NoSync they are expected to be
// lost, which shows the simulation would catch a missing sync.
func TestSyncedWritesSurviveCrash(t *testing.T) {
	t.Parallel()
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoSync=%v", noSync), func(t *testing.T) {
			t.Parallel()
			fs := vfs.NewCrashableMem()
			d := open(t, Config{FS: fs, NoSync: noSync})
			mustWrite(t, d, "n", "c", "m", []byte("acked"), 100, 10)
			mustFold(t, d, "n", "c2", nil, []byte("T"), 20)
			crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})

			after := open(t, Config{FS: crashed})
			shards := mustRead(t, after, "n", "c").Shards
			tally := mustRead(t, after, "n", "c2").Tally
			survived := len(shards) == 1 && string(shards[0].State) == "acked" && tally != nil
			switch {
			case !noSync && !survived:
				t.Errorf("acknowledged writes lost in a crash: shards %+v, tally %+v", shards, tally)
			case noSync && (len(shards) != 0 || tally != nil):
				t.Logf("NoSync writes happened to survive the crash (allowed, not guaranteed)")
			}
		})
	}
}

func TestLockSameProcess(t *testing.T) {
	t.Parallel()

	t.Run("disk", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		first := open(t, Config{Dir: dir})

		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(dir, link); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(mustGetwd(t), dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{dir, dir + "/", link, rel} {
			_, err := Open(context.Background(), Config{Dir: path, Logger: quiet})
			assertLocked(t, err, path)
		}

		// Closing the holder frees the directory.
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		open(t, Config{Dir: dir})
	})

	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		fs := vfs.NewMem()
		first := open(t, Config{FS: fs})
		_, err := Open(context.Background(), Config{FS: fs, Logger: quiet})
		assertLocked(t, err, memDefaultDir)
		// Another directory of the same FS, or another FS, is independent.
		open(t, Config{FS: fs, Dir: "other"})
		open(t, Config{FS: vfs.NewMem()})
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		open(t, Config{FS: fs})
	})
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

func assertLocked(t *testing.T, err error, dir string) {
	t.Helper()
	if !errors.Is(err, driver.ErrLocked) {
		t.Fatalf("Open(%q) error = %v, want ErrLocked", dir, err)
	}
	if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, "another abacus process holds it") {
		t.Errorf("lock error %q should name %q and say another abacus process holds it", msg, dir)
	}
}

const lockChildEnv = "ABACUS_EMBEDDED_LOCK_CHILD_DIR"

// TestLockOtherProcess re-executes this test binary as a child that tries to
// open a directory the parent holds. POSIX locks are per process, so only a
// real second process proves the lock excludes one.
func TestLockOtherProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	parent := open(t, Config{Dir: dir})

	out, err := runLockChild(t, dir)
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(out, "child: locked:") {
		t.Fatalf("child did not report ErrLocked:\n%s", out)
	}
	t.Logf("child output:\n%s", out)

	// Once the parent lets go, the child can open the directory.
	if err := parent.Close(); err != nil {
		t.Fatal(err)
	}
	out, err = runLockChild(t, dir)
	if err != nil {
		t.Fatalf("child after parent closed: %v\n%s", err, out)
	}
	if !strings.Contains(out, "child: opened") {
		t.Fatalf("child could not open the released directory:\n%s", out)
	}
}

func runLockChild(t *testing.T, dir string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLockChildProcess$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestLockChildProcess is the child half of TestLockOtherProcess; run
// directly it does nothing.
func TestLockChildProcess(t *testing.T) {
	dir := os.Getenv(lockChildEnv)
	if dir == "" {
		t.Skip("only runs as TestLockOtherProcess's child")
	}
	d, err := Open(context.Background(), Config{Dir: dir, Logger: quiet})
	switch {
	case err == nil:
		fmt.Println("child: opened")
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	case errors.Is(err, driver.ErrLocked):
		assertLocked(t, err, dir)
		fmt.Println("child: locked:", err)
	default:
		t.Fatalf("child: Open: %v", err)
	}
}

// TestOpenRefusesForeignStore opens a Pebble store written with another merge
// operator. Open must fail (mixing resolution rules would corrupt counters)
// and must release the directory on the way out.
func TestOpenRefusesForeignStore(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	db, err := pebble.Open("foreign", &pebble.Options{FS: fs, Logger: slogAdapter{quiet}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second attempt would see ErrLocked if the first leaked the lock
		_, err := Open(context.Background(), Config{FS: fs, Dir: "foreign", Logger: quiet})
		if err == nil || errors.Is(err, driver.ErrLocked) || !strings.Contains(err.Error(), "merger") {
			t.Fatalf("Open of a store with another merger: %v", err)
		}
	}
}
