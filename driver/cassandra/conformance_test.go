package cassandra_test

import (
	"context"
	"testing"
	"time"

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

// openUnmanaged opens a driver the caller closes. It allows two minutes:
// the first Open of a keyspace makes its whole schema, one agreement wait
// per statement, which a loaded 3-node cluster on two cores has taken
// more than one.
func openUnmanaged(t *testing.T, cfg cassandra.Config) *cassandra.Driver {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := cassandra.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return d
}
