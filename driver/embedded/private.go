package embedded

import (
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The store holds every request id it has seen (and, for ledgers, who paid
// whom), so on the operating system's file system it is the process
// owner's alone: the data directory is 0700 and every file Pebble creates
// in it 0600, whatever the umask. (A memory file system, in tests, has no
// owners to keep out.)

// privateFS is vfs.Default with files created 0600 and directories 0700.
type privateFS struct{ vfs.FS }

func (p privateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, category)
	return f, keepPrivate(name, err)
}

func (p privateFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.OpenReadWrite(name, category, opts...)
	return f, keepPrivate(name, err)
}

func (p privateFS) Lock(name string) (io.Closer, error) {
	c, err := p.FS.Lock(name)
	return c, keepPrivate(name, err)
}

func (p privateFS) MkdirAll(dir string, _ os.FileMode) error {
	return p.FS.MkdirAll(dir, 0o700)
}

// keepPrivate takes group and other permissions off a file just opened.
// The directory is 0700 already, so the moment between create and chmod
// exposes nothing.
func keepPrivate(name string, openErr error) error {
	if openErr != nil {
		return openErr
	}
	return os.Chmod(name, 0o600)
}

// privateDir makes dir, or tightens an existing one, to 0700 on the
// operating system's file system; a directory made by an earlier release
// was 0755.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if info.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make it private (0700): %w", err)
		}
	}
	return nil
}
