package embedded

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// On the operating system's file system the data directory is 0700 and
// every file in it 0600, whatever the umask, and a directory left 0755 by
// an earlier release is tightened on open.
func TestDataFilesAreTheOwnersAlone(t *testing.T) {
	t.Parallel()
	for _, existing := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "data")
		if existing {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		d, err := Open(ctx, Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.CreateNamespace(ctx, &driver.CreateNamespaceParams{Namespace: driver.Namespace{Name: "secret", Model: "sharded", Type: "sum"}}); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		files := 0
		err = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			want := fs.FileMode(0o600)
			if e.IsDir() {
				want = 0o700
			} else {
				files++
			}
			if info.Mode().Perm() != want {
				t.Errorf("%s is %v, want %v (directory existed before: %v)", path, info.Mode().Perm(), want, existing)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if files < 3 {
			t.Fatalf("only %d files under %s: the store wrote less than expected", files, dir)
		}
	}
}

// A data directory this process may not make private (a volume owned by
// root) is used as it is, with a warning, and the store still opens.
func TestDataDirectoryThatCannotBeMadePrivate(t *testing.T) {
	// Not parallel: it replaces chmod for the package.
	defer func(orig func(string, fs.FileMode) error) { chmod = orig }(chmod)
	chmod = func(string, fs.FileMode) error { return fs.ErrPermission }
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	if err := privateDir(dir, log); err != nil {
		t.Fatalf("privateDir refused a directory it cannot chmod: %v", err)
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "cannot be made private") {
		t.Fatalf("no warning for a directory left open to others; logged %q", logged.String())
	}
	logged.Reset()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := privateDir(dir, log); err != nil || logged.Len() != 0 {
		t.Fatalf("a private directory: err %v, logged %q; want neither", err, logged.String())
	}
}
