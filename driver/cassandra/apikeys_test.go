package cassandra

import (
	"testing"

	"github.com/abacusdb/abacus/driver"
)

func TestKeysAreReadAndWrittenAtAQuorumAtLeast(t *testing.T) {
	t.Parallel()
	for configured, want := range map[driver.Consistency]driver.Consistency{
		driver.Default: driver.Quorum, driver.One: driver.Quorum, driver.LocalOne: driver.Quorum, driver.Two: driver.Quorum,
		driver.Any: driver.Quorum, driver.Quorum: driver.Quorum, driver.LocalQuorum: driver.LocalQuorum,
		driver.EachQuorum: driver.EachQuorum, driver.All: driver.All,
	} {
		if got := keyLevel(configured); got != want {
			t.Errorf("keyLevel(%v) = %v, want %v", configured, got, want)
		}
	}
}
