package cassandra

import (
	"context"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

var _ driver.TimeSource = (*Driver)(nil)

// StoreTime implements driver.TimeSource: now() is a time UUID made by the
// coordinator from its own clock (millisecond precision), and the query
// works from Cassandra 2.1 on.
func (d *Driver) StoreTime(ctx context.Context) (time.Time, error) {
	const op = "read the store's time"
	if err := d.begin(ctx, op); err != nil {
		return time.Time{}, err
	}
	var u gocql.UUID
	err := d.session.Query("SELECT now() FROM system.local").Consistency(gocql.One).ScanContext(ctx, &u)
	if err != nil {
		return time.Time{}, fmt.Errorf("cassandra: %s: %w", op, mapError(opRead, err))
	}
	if u.Version() != 1 {
		return time.Time{}, fmt.Errorf("cassandra: %s: now() returned a version %d UUID, not a time UUID", op, u.Version())
	}
	return u.Time(), nil
}
