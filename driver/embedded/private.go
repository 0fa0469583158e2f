package embedded

import (
	"io"
	"log/slog"
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
	return keepPrivate[vfs.File](name)(p.FS.Create(name, category))
}

func (p privateFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return keepPrivate[vfs.File](name)(p.FS.OpenReadWrite(name, category, opts...))
}

func (p privateFS) Lock(name string) (io.Closer, error) {
	return keepPrivate[io.Closer](name)(p.FS.Lock(name))
}

func (p privateFS) MkdirAll(dir string, _ os.FileMode) error {
	return p.FS.MkdirAll(dir, 0o700)
}

// keepPrivate takes group and other permissions off the file name just
// opened, closing it if that fails. The directory is 0700 already, so the
// moment between create and chmod exposes nothing.
func keepPrivate[F io.Closer](name string) func(F, error) (F, error) {
	return func(f F, err error) (F, error) {
		if err != nil {
			return f, err
		}
		if err := os.Chmod(name, 0o600); err != nil {
			_ = f.Close()
			var zero F
			return zero, err
		}
		return f, nil
	}
}

// chmod is os.Chmod; a test replaces it to see what a directory this
// process may not change does, which a test running as root cannot make.
var chmod = os.Chmod

// privateDir makes dir, or tightens an existing one, to 0700 on the
// operating system's file system; a directory made by an earlier release
// was 0755. A directory this process may not change (a mount point owned
// by root, as container volumes are) is used as it is, with a warning:
// its files are still 0600.
func privateDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if mode := info.Mode().Perm(); mode&0o077 != 0 {
		if err := chmod(dir, 0o700); err != nil {
			log.Warn("embedded: the data directory is open to other users and cannot be made private (0700); its files are 0600", "dir", dir, "mode", mode.String(), "err", err)
		}
	}
	return nil
}
