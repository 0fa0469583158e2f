package embedded

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
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
