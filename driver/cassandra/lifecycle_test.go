package cassandra

import (
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// Cuts are read at keyLevel of the read level; every such read must meet
// every cut write: a quorum at least, and in every data center when a read
// may be local to one.
func TestCutWritesMeetCutReads(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ read, write, want driver.Consistency }{
		{driver.Default, driver.Default, driver.Quorum},
		{driver.One, driver.One, driver.Quorum},
		{driver.Quorum, driver.Quorum, driver.Quorum},
		{driver.All, driver.One, driver.Quorum},
		{driver.LocalQuorum, driver.Quorum, driver.EachQuorum},
		{driver.LocalQuorum, driver.LocalQuorum, driver.EachQuorum},
		{driver.Quorum, driver.LocalQuorum, driver.EachQuorum},
		{driver.One, driver.EachQuorum, driver.EachQuorum},
	} {
		if got := cutWriteLevel(c.read, c.write); got != c.want {
			t.Errorf("reads at %v, writes at %v: cuts written at %v, want %v", c.read, c.write, got, c.want)
		}
	}
}
