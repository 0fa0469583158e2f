package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultCacheSize is the block cache size used when Config.CacheSize is zero.
const DefaultCacheSize int64 = 32 << 20

// memDefaultDir is the directory used inside a memory FS when Config.Dir is
// empty; a memory FS has no working directory worth choosing.
const memDefaultDir = "abacus-data"

// Config configures Open.
type Config struct {
	// Dir is the data directory; it is created if missing. Required unless
	// FS is a memory FS (*vfs.MemFS), where it defaults to "abacus-data".
	// The CLI uses ./abacus-data. One process at a time may open it.
	Dir string

	// FS is the file system holding Dir. Nil means vfs.Default, the
	// operating system's. Tests use vfs.NewMem().
	FS vfs.FS

	// NoSync, when true, acknowledges writes once they are in the WAL's
	// buffer instead of on disk. Default false: every write is fsynced
	// before it returns, because an acknowledged counter update must survive
	// kill -9 and power loss. With NoSync a process crash still loses
	// nothing (the OS holds the data) but a machine crash can.
	NoSync bool

	// CacheSize is Pebble's block cache size in bytes. Zero means
	// DefaultCacheSize (32 MiB).
	CacheSize int64

	// Logger receives Pebble's log output. Nil means slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.Dir == "" && isMemFS(c.FS) {
		c.Dir = memDefaultDir
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	if c.Dir == "" {
		return errors.New("embedded: Config.Dir is required (the CLI uses ./abacus-data)")
	}
	if c.CacheSize < 0 {
		return fmt.Errorf("embedded: Config.CacheSize is %d, must not be negative", c.CacheSize)
	}
	return nil
}

func isMemFS(fs vfs.FS) bool {
	_, ok := fs.(*vfs.MemFS)
	return ok
}

// Driver is the embedded storage driver. It is safe for concurrent use.
type Driver struct {
	dir       string
	logger    *slog.Logger
	writeOpts *pebble.WriteOptions

	// mu guards db against Close: operations hold it for reading for their
	// whole duration, so Close waits for them and none touches a closed DB
	// (which Pebble answers with a panic).
	mu      sync.RWMutex
	db      *pebble.DB
	lock    *pebble.Lock
	release func() // drops this process's claim on dir

	// nsMu makes CreateNamespace's check-then-set atomic. A process-wide
	// mutex suffices because the directory lock admits one process.
	nsMu sync.Mutex

	// claims does the same for strict-mode ledger claims (ledger.go).
	claims claimState
	// entryPurge paces the deletion of expired ledger entries.
	entryPurge entryPurge
	// rightsMu makes SwapLedgerRights's check-then-set atomic
	// (ledger_rights.go).
	rightsMu sync.Mutex

	// pauseMu makes SetQueuePause's compare-then-write atomic
	// (queue_pause.go).
	pauseMu sync.Mutex

	// purged is the span of shard tombstones deleted and not yet
	// compacted away (tombstones.go); compact compacts a span (the DB's
	// Compact, replaced in tests).
	purged  purgedSpan
	compact func(ctx context.Context, start, end []byte) error
}

var _ driver.Driver = (*Driver)(nil)

// Open opens (creating if needed) the store in cfg.Dir. It fails with an
// error wrapping driver.ErrLocked if another process, or another Driver in
// this process, has the directory open.
func Open(ctx context.Context, cfg Config) (*Driver, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embedded: open: %w", err)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}

	release, err := claimInProcess(cfg)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			release()
		}
	}()

	// Pebble would create the directory and take the lock itself, but taking
	// the lock first lets us tell "held by someone else" apart from every
	// other failure and say so plainly.
	mkdir := func() error { return cfg.FS.MkdirAll(cfg.Dir, 0o700) }
	if cfg.FS == vfs.Default {
		cfg.FS = privateFS{vfs.Default}
		mkdir = func() error { return privateDir(cfg.Dir, cfg.Logger) }
	}
	if err := mkdir(); err != nil {
		return nil, fmt.Errorf("embedded: create data directory %q: %w", cfg.Dir, err)
	}
	lock, err := pebble.LockDirectory(cfg.Dir, cfg.FS)
	if err != nil {
		if isLockConflict(err) {
			return nil, lockedError(cfg.Dir, "")
		}
		return nil, fmt.Errorf("embedded: lock data directory %q: %w", cfg.Dir, err)
	}
	defer func() {
		if !ok {
			_ = lock.Close()
		}
	}()

	opts := &pebble.Options{
		FS:                 cfg.FS,
		Lock:               lock,
		CacheSize:          cfg.CacheSize,
		Merger:             lwwMergeOperator,
		Logger:             slogAdapter{cfg.Logger},
		FormatMajorVersion: pebble.FormatNewest,
	}
	db, err := pebble.Open(cfg.Dir, opts)
	if err != nil {
		return nil, fmt.Errorf("embedded: open store in %q: %w", cfg.Dir, err)
	}

	d := &Driver{
		dir:       cfg.Dir,
		logger:    cfg.Logger,
		writeOpts: pebble.Sync,
		db:        db,
		lock:      lock,
		release:   release,
	}
	d.compact = func(ctx context.Context, start, end []byte) error { return db.Compact(ctx, start, end, false) }
	if cfg.NoSync {
		d.writeOpts = pebble.NoSync
	}
	ok = true
	return d, nil
}

// Name implements driver.Driver.
func (d *Driver) Name() string { return "embedded" }

// Dir returns the data directory the driver has open.
func (d *Driver) Dir() string { return d.dir }

// Close waits for running operations, closes the store and releases the
// directory. Acknowledged writes are already in the WAL, so Close does not
// need to flush for them to survive. A second Close returns an error
// wrapping driver.ErrClosed.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return fmt.Errorf("embedded: close: %w", driver.ErrClosed)
	}
	err := d.db.Close()
	// The lock must outlive the DB; release it even if Close failed, since
	// the DB is unusable either way and holding the directory would only
	// block a restart.
	if lerr := d.lock.Close(); err == nil {
		err = lerr
	}
	d.release()
	d.db, d.lock, d.release = nil, nil, nil
	if err != nil {
		return fmt.Errorf("embedded: close %q: %w", d.dir, err)
	}
	return nil
}

// acquire checks ctx and that the driver is open, and on success leaves
// d.mu read-locked for the caller to release.
func (d *Driver) acquire(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("embedded: %s: %w", op, err)
	}
	d.mu.RLock()
	if d.db == nil {
		d.mu.RUnlock()
		return fmt.Errorf("embedded: %s: %w", op, driver.ErrClosed)
	}
	return nil
}

// readLocked runs read while the driver is open, holding its read lock, and
// names op and what it read (subject, a format with args such as " %s/%s")
// in read's error. The subject is formatted only on failure.
func readLocked[T any](ctx context.Context, d *Driver, op string, read func() (T, error), subject string, args ...any) (T, error) {
	var zero T
	if err := d.acquire(ctx, op); err != nil {
		return zero, err
	}
	defer d.mu.RUnlock()
	v, err := read()
	if err != nil {
		return zero, fmt.Errorf("embedded: %s%s: %w", op, fmt.Sprintf(subject, args...), err)
	}
	return v, nil
}

// merge is a blind write while the driver is open: it merges value, one
// cell, into key, and the merge operator settles later which cell wins. A
// failure names op and what was written, as subject tells; a function, so
// that the hot write path builds no message it does not need.
func (d *Driver) merge(ctx context.Context, op string, key, value []byte, subject func() string) error {
	if err := d.acquire(ctx, op); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	if err := d.db.Merge(key, value, d.writeOpts); err != nil {
		return fmt.Errorf("embedded: %s %s: %w", op, subject(), err)
	}
	return nil
}

// writeBatch applies the writes fill makes in one batch, which Pebble
// commits atomically, while the driver is open. A failure names op and what
// was written (subject, formatted with args only then).
func (d *Driver) writeBatch(ctx context.Context, op string, fill func(*pebble.Batch) error, subject string, args ...any) error {
	if err := d.acquire(ctx, op); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	b := d.db.NewBatch()
	defer b.Close()
	err := fill(b)
	if err == nil {
		err = b.Commit(d.writeOpts)
	}
	if err != nil {
		return fmt.Errorf("embedded: %s%s: %w", op, fmt.Sprintf(subject, args...), err)
	}
	return nil
}

// ---- directory locking ---------------------------------------------------------

// openDirs holds the absolute paths of OS directories open in this process.
//
// Pebble's file lock alone is not enough within one process: POSIX record
// locks belong to the process, so a second fcntl lock from the same process
// succeeds, and Pebble's own in-process check compares path strings, which a
// relative path or a symlink defeats. Two DBs on one directory would corrupt
// it, so we key on the resolved path instead.
var openDirs struct {
	sync.Mutex
	m map[string]bool
}

// claimInProcess registers cfg.Dir as open in this process. A memory FS needs
// no entry: it is private to its *MemFS value, which locks itself.
func claimInProcess(cfg Config) (release func(), err error) {
	if cfg.FS != vfs.Default {
		return func() {}, nil
	}
	abs, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("embedded: resolve data directory %q: %w", cfg.Dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	} // a missing directory cannot be reached through a symlink yet
	openDirs.Lock()
	defer openDirs.Unlock()
	if openDirs.m[abs] {
		return nil, lockedError(cfg.Dir, "this process already has it open")
	}
	if openDirs.m == nil {
		openDirs.m = make(map[string]bool)
	}
	openDirs.m[abs] = true
	return func() {
		openDirs.Lock()
		delete(openDirs.m, abs)
		openDirs.Unlock()
	}, nil
}

func lockedError(dir, detail string) error {
	if detail != "" {
		detail = " (" + detail + ")"
	}
	return fmt.Errorf("embedded: data directory %q is in use: another abacus process holds it%s: %w", dir, detail, driver.ErrLocked)
}

// isLockConflict reports whether LockDirectory failed because someone else
// holds the lock, as opposed to a permission or I/O problem.
func isLockConflict(err error) bool {
	// fcntl reports a held lock as EAGAIN or EACCES (POSIX allows either);
	// vfs.MemFS mimics EAGAIN.
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
		// EACCES is also open(2)'s "permission denied" for the lock file,
		// which arrives wrapped in *os.PathError; fcntl's errno is bare.
		if errors.Is(err, syscall.EACCES) {
			var pe *os.PathError
			if errors.As(err, &pe) {
				return false
			}
		}
		return true
	}
	// Pebble's in-process guard has no sentinel; claimInProcess normally
	// catches this case first.
	return strings.Contains(err.Error(), "lock held by current process")
}

// ---- logging ---------------------------------------------------------------------

// slogAdapter routes Pebble's printf-style logging into slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Infof(format string, args ...any) {
	a.l.Info(fmt.Sprintf(format, args...), "component", "pebble")
}

func (a slogAdapter) Errorf(format string, args ...any) {
	a.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf is called by Pebble only when its invariants are broken and it
// must not continue; panicking keeps the stack for the post-mortem.
func (a slogAdapter) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	a.l.Error(msg, "component", "pebble", "fatal", true)
	panic("pebble: " + msg)
}
