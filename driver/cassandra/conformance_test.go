package cassandra_test

import (
	"testing"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/driver/drivertest"
)

// TestConformance runs the shared driver contract suite against a real
// Cassandra, in one fresh keyspace. Every handle the suite asks for is a
// new driver on that keyspace.
func TestConformance(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	drivertest.Exercise(t, func(t *testing.T) driver.Driver {
		return openUnmanaged(t, cfg)
	})
}

// openUnmanaged opens a driver the caller closes.
func openUnmanaged(t *testing.T, cfg cassandra.Config) *cassandra.Driver {
	t.Helper()
	d, err := cassandra.Open(ctxT(t), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return d
}
