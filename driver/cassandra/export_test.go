package cassandra

import (
	"context"

	"github.com/abacusdb/abacus/driver"
)

// HoldsReplace exposes holdsReplace, the check a replace whose outcome was
// unknown makes, to the external tests.
func (d *Driver) HoldsReplace(ctx context.Context, q driver.Queue) bool {
	return d.holdsReplace(ctx, q)
}
