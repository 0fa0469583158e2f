package driver

import "context"

// Event is one increment of a counter of the events model (“Highly Available Counters Using Cassandra”,
// op-based). Its key within the counter is (Time, ID): a retry that carries
// the same id and time writes the same row again, from any process.
type Event struct {
	// ID is the request id that made the event.
	ID string
	// Time is the event time in microseconds since the epoch. It is also
	// the write timestamp of the event's row.
	Time int64
	// Delta is the amount the event adds (negative to subtract).
	Delta int64
}

// Rollup is the folded value of every event at or before Epoch.
type Rollup struct {
	// Value is the sum of the folded events (plus the previous rollup).
	Value int64
	// Epoch is in microseconds since the epoch. Events with Time <= Epoch
	// are part of Value (or were cleared); a read adds only later events.
	// It is also the rollup's write timestamp, so a rollup never replaces
	// one with a later epoch.
	Epoch int64
}

// EventCounter is the per-counter record of the events model: the current
// rollup and the time buckets that may hold events.
type EventCounter struct {
	// Rollup is nil when the counter was never rolled up or cleared.
	Rollup *Rollup
	// Buckets are the start times (µs) of every bucket marked by
	// MarkEventBucket and not yet removed by DeleteEventBuckets, ascending.
	Buckets []int64
}

// MarkEventBucketParams are the parameters of Events.MarkEventBucket.
type MarkEventBucketParams struct {
	Namespace string
	Counter   string
	// Bucket is the start (µs) of the time bucket; it is also the marker's
	// write timestamp, so a marker removed at a later timestamp stays
	// removed when a late write of it arrives.
	Bucket      int64
	Consistency Consistency
}

// WriteEventParams are the parameters of Events.WriteEvent.
type WriteEventParams struct {
	Namespace string
	Counter   string
	// Bucket is the start (µs) of the time bucket holding Event.Time; it
	// selects the partition. The caller computes it; drivers do not check.
	Bucket      int64
	Event       Event
	Consistency Consistency
}

// CheckEventWrites reports whether ws is a batch Events.WriteEvents takes:
// not more than MaxShardWrites writes, all at one consistency level.
func CheckEventWrites(ws []WriteEventParams) error {
	return checkBatch("event", ws, func(p *WriteEventParams) Consistency { return p.Consistency })
}

// ReadEventCounterParams are the parameters of Events.ReadEventCounter.
type ReadEventCounterParams struct {
	Namespace   string
	Counter     string
	Consistency Consistency
}

// ReadEventsParams are the parameters of Events.ReadEvents.
type ReadEventsParams struct {
	Namespace string
	Counter   string
	Bucket    int64
	// After and UpTo select the events with After < Time <= UpTo.
	After       int64
	UpTo        int64
	Consistency Consistency
}

// WriteRollupParams are the parameters of Events.WriteRollup.
type WriteRollupParams struct {
	Namespace   string
	Counter     string
	Rollup      Rollup
	Consistency Consistency
}

// DeleteEventBucketsParams are the parameters of Events.DeleteEventBuckets.
type DeleteEventBucketsParams struct {
	Namespace string
	Counter   string
	// Buckets are the bucket start times whose events and markers go.
	Buckets []int64
	// Timestamp is the write timestamp of the deletes (the rollup's epoch).
	// Only what was written at or below it is removed.
	Timestamp   int64
	Consistency Consistency
}

// Events stores the events model: one row per event in a partition per
// (namespace, counter, time bucket), and per counter a record holding the
// rollup and the marked buckets.
type Events interface {
	EventSeals

	// MarkEventBucket records that the bucket may hold events of the
	// counter. It is a blind, idempotent write at timestamp p.Bucket.
	MarkEventBucket(ctx context.Context, p *MarkEventBucketParams) error

	// WriteEvent stores the event at timestamp p.Event.Time. It is blind and
	// idempotent: the same event written twice is one row. Two writes with
	// the same (Time, ID) and different deltas leave one of them, the same
	// one on every replica.
	WriteEvent(ctx context.Context, p *WriteEventParams) error

	// WriteEvents makes several WriteEvent calls, of any counters, in one
	// request to the store (an unlogged batch; one Pebble batch). Every
	// write must have the same Consistency. On success every event is
	// written; on an error any of them may or may not have been, as if
	// each had failed on its own: the batch is not atomic across counters
	// (so a failed batch of several writes is never ErrUnavailable, which
	// says nothing was applied). It may hold at most MaxShardWrites writes.
	WriteEvents(ctx context.Context, ws []WriteEventParams) error

	// ReadEventCounter returns the counter's rollup and marked buckets from
	// one read. A counter never written returns an empty record, not
	// ErrNotFound.
	ReadEventCounter(ctx context.Context, p *ReadEventCounterParams) (*EventCounter, error)

	// ReadEvents returns the bucket's events with After < Time <= UpTo,
	// newest first (ties by ID ascending, in byte order). It reads the
	// whole range however many rows it holds, possibly in several requests
	// (pages), so a DeleteEventBuckets landing meanwhile may remove rows at
	// or before its timestamp that were not read yet. An empty range
	// (After >= UpTo) returns no events, not an error.
	ReadEvents(ctx context.Context, p *ReadEventsParams) ([]Event, error)

	// WriteRollup writes the rollup at timestamp p.Rollup.Epoch. A rollup
	// with a higher epoch is left as it is; of two with the same epoch and
	// different values one wins, the same one on every replica. Replaying
	// is harmless.
	WriteRollup(ctx context.Context, p *WriteRollupParams) error

	// DeleteEventBuckets deletes, at p.Timestamp, every event of the listed
	// buckets and then their markers. Events and markers written at a
	// higher timestamp survive; ones written later at a lower or equal
	// timestamp stay deleted, also events with an id never seen before.
	// The call is not atomic across buckets, but a bucket's marker never
	// goes before its events; after an error the caller replays the call,
	// which is harmless.
	DeleteEventBuckets(ctx context.Context, p *DeleteEventBucketsParams) error

	// ListEventCounters returns the key of every counter that has a record
	// (a rollup or a marked bucket), sorted by namespace and then counter.
	// Events alone make no record. It scans; it is for rollup sweeps.
	ListEventCounters(ctx context.Context, p *ListCountersParams) ([]CounterKey, error)
}

// EventSeal is one sealed range of a counter of the events model: the
// events with Start < Time <= End that the rollup sealing the range read,
// and the counter's value at End. Seals of one counter form a chain —
// each starts where the one before it ended, from the epoch its writer
// read — so the seal holding an event time is the one with the greatest
// Start below it. Once stored a seal never changes, which is what lets a
// retry arriving after its range was sealed learn whether it counted.
type EventSeal struct {
	// Start and End bound the range, in microseconds: Start < Time <= End.
	Start int64
	End   int64
	// Value is the counter's value at End: the value at Start plus the
	// events of the range (0 for a clear).
	Value int64
	// Clear is set when the range was closed by a clear: no event of it
	// counts.
	Clear bool
	// Events names the events of the range that count, encoded by the
	// events engine. Drivers store it as it is.
	Events []byte
}

// SealEventsParams are the parameters of Events.SealEvents.
type SealEventsParams struct {
	Namespace string
	Counter   string
	// Bucket is the start (µs) of the time bucket holding Seal.Start; it
	// selects the partition. The caller computes it; drivers do not check.
	Bucket int64
	Seal   EventSeal
	// Consistency is the level the seal is committed at.
	Consistency Consistency
}

// ReadEventSealParams are the parameters of Events.ReadEventSeal.
type ReadEventSealParams struct {
	Namespace string
	Counter   string
	Bucket    int64
	// Before selects the seal of the bucket with the greatest Start < Before.
	Before      int64
	Consistency Consistency
}

// EventSeals stores the seals of the events model, in a partition per
// (namespace, counter, bucket of the seal's Start), one row per Start.
type EventSeals interface {
	// SealEvents stores p.Seal unless the counter already holds a seal with
	// the same Start. It returns the seal stored under that Start — p.Seal
	// when applied is true, else the one that was there — so of any number
	// of concurrent calls for one Start, from any processes, exactly one
	// applies and all return its seal. It is linearizable per (counter,
	// Start): a Paxos round on Cassandra, a lock on the embedded store. On
	// an error the seal may or may not have been stored; calling again
	// settles it.
	SealEvents(ctx context.Context, p *SealEventsParams) (stored *EventSeal, applied bool, err error)

	// ReadEventSeal returns the seal of the bucket with the greatest Start
	// below p.Before, or ErrNotFound when the bucket holds none.
	ReadEventSeal(ctx context.Context, p *ReadEventSealParams) (*EventSeal, error)

	// DeleteEventSeals deletes every seal of the listed buckets. The
	// caller deletes only buckets no seal is written to any more (every
	// Start in them is behind the counter's epoch).
	DeleteEventSeals(ctx context.Context, p *DeleteEventSealsParams) error
}

// DeleteEventSealsParams are the parameters of Events.DeleteEventSeals.
type DeleteEventSealsParams struct {
	Namespace   string
	Counter     string
	Buckets     []int64
	Consistency Consistency
}
