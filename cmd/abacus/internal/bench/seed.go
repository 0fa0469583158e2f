package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/sharded"
)

// seedParallelism bounds the concurrent writes of SeedShards: enough to hide
// the round trip to a local Cassandra, few enough not to overload it.
const seedParallelism = 16

// SeedShards writes n shards of one sum counter straight through the
// driver, as n different mutators would have, each holding +1; the counter
// then reads n. It is how the read scenarios get counters with 100 or 1,000
// shards in a second instead of running 1,000 processes.
//
// Every shard has the given expires_at (microseconds) and is written just
// below it, the way a mutator writes. An expires_at more than the GC grace
// in the past makes the shards final, so Client.GC folds them; one in the
// future makes them live shards that every read must merge.
func SeedShards(ctx context.Context, d driver.Shards, namespace, counter string, n int, expiresAt int64, cl driver.Consistency) error {
	st, err := crdt.New(crdt.KindSum)
	if err != nil {
		return err
	}
	if err := st.Apply(crdt.Op{Delta: 1}); err != nil {
		return err
	}
	state, err := st.MarshalBinary()
	if err != nil {
		return err
	}
	ids := make(chan string)
	errs := make([]error, seedParallelism)
	var wg sync.WaitGroup
	for w := 0; w < seedParallelism; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for id := range ids {
				if errs[w] != nil {
					continue // drain, so the producer never blocks
				}
				errs[w] = d.WriteShard(ctx, &driver.WriteShardParams{
					Namespace:   namespace,
					Counter:     counter,
					Shard:       driver.Shard{ID: id, State: state, ExpiresAt: expiresAt},
					Timestamp:   expiresAt - 1,
					Consistency: cl,
				})
			}
		}(w)
	}
	for i := 0; i < n; i++ {
		ids <- sharded.ShardID(expiresAt)
	}
	close(ids)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: seeding %d shards of %s/%s: %w", n, namespace, counter, err)
	}
	return nil
}
