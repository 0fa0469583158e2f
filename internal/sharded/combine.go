package sharded

import (
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/combine"
)

// newCombiner sends the shard writes of all of a process's mutators to the
// store, several counters' writes to a request (driver.Shards.WriteShards):
// group commit across counters (package combine). A mutator's own group
// commit gains nothing when its counter is one of many quiet ones: every
// write carries one update, and the store pays a request per update, as
// for a native counter. A write that fails, alone or combined, is an
// unknown outcome to its mutator, as it always was: the update stays in
// the mutator's state and a later write may persist it.
func newCombiner(store driver.Shards, start func(func()) bool, cfg Config) *combine.Combiner[driver.WriteShardParams] {
	return &combine.Combiner[driver.WriteShardParams]{
		Start: start, Timeout: cfg.WriteTimeout,
		MaxWrites: cfg.MaxShardBatch, MaxBytes: combine.MaxBatchBytes, MaxInflight: cfg.MaxInflightBatches,
		Size:  writeBytes,
		Level: func(p *driver.WriteShardParams) driver.Consistency { return p.Consistency },
		One:   store.WriteShard,
		Many:  store.WriteShards,
	}
}

// writeBytes estimates what a write adds to a batch as Cassandra 3.0 and
// later count it: its key, its state and the cells' overhead. (2.1 and 2.2
// count the clustering key once per cell: about 1.5 times this.)
func writeBytes(p *driver.WriteShardParams) int {
	return len(p.Namespace) + len(p.Counter) + len(p.Shard.ID) + len(p.Shard.State) + 24
}
