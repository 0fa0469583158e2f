package cassandra_test

import (
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// A replace retried after an unknown outcome finds a refusal, and must
// tell its own earlier attempt from a racing replace's. Racers of one
// name may share a creation time (it has a millisecond's grain), so the
// whole record decides: a replace with another configuration, or another
// generation, is not this one.
func TestAReplaceRecognisesOnlyItsOwnRecord(t *testing.T) {
	t.Parallel()
	d := sharedDriver(t)
	ctx := ctxT(t)
	first := driver.Queue{
		Name: "q-replace-own", Shards: 4, Spread: 1, ShardDuration: time.Minute,
		MaxDeliveries: 5, VisibilityTimeout: time.Second, CreatedAt: time.UnixMilli(1_700_000_000_000).UTC(),
	}
	if err := d.CreateQueue(ctx, &driver.CreateQueueParams{Queue: first}); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteQueue(ctx, &driver.DeleteQueueParams{Name: first.Name, CreatedAt: first.CreatedAt, At: time.UnixMilli(1_700_000_001_000)}); err != nil {
		t.Fatal(err)
	}
	deleted, err := d.GetQueue(ctx, &driver.GetQueueParams{Name: first.Name})
	if err != nil {
		t.Fatal(err)
	}
	won := first
	won.Shards, won.Generation, won.CreatedAt = 8, 1, time.UnixMilli(1_700_000_100_000).UTC()
	if d.HoldsReplace(ctx, won) {
		t.Fatal("a deleted record is taken for the replace's")
	}
	if err := d.CreateQueue(ctx, &driver.CreateQueueParams{Queue: won, Replaces: deleted}); err != nil {
		t.Fatal(err)
	}
	if !d.HoldsReplace(ctx, won) {
		t.Fatal("the replace does not recognise its own record")
	}
	lost := won
	lost.Shards = 9 // the same creation time, another configuration
	if d.HoldsReplace(ctx, lost) {
		t.Fatal("a racing replace with the same creation time and 9 shards takes the winner's 8-shard record for its own")
	}
	later := won
	later.Generation = 2
	if d.HoldsReplace(ctx, later) {
		t.Fatal("a replace of another generation takes the record for its own")
	}
}
