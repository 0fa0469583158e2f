package embedded

import (
	"testing"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/drivertest"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestConformance runs the shared driver suite against a store in memory and
// one on disk (where syncing and the lock file are real). The suite closes
// each handle it opens, so each call opens a fresh store.
func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("mem", func(t *testing.T) {
		t.Parallel()
		drivertest.Exercise(t, func(t *testing.T) driver.Driver {
			return open(t, Config{FS: vfs.NewMem()})
		})
	})
	t.Run("disk", func(t *testing.T) {
		t.Parallel()
		drivertest.Exercise(t, func(t *testing.T) driver.Driver {
			return open(t, Config{Dir: t.TempDir()})
		})
	})
}
