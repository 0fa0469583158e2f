package driver

import "context"

// ActorValue is one actor's latest absolute value of a counter of the actor
// model (“Highly Available Counters Using Cassandra”, state-based).
type ActorValue struct {
	Actor string
	Value int64
	// Version is the write timestamp the value was set at.
	Version int64
}

// SetActorValueParams are the parameters of Actors.SetActorValue.
type SetActorValueParams struct {
	Namespace string
	Counter   string
	Actor     string
	Value     int64
	// Version is the write timestamp; it must be positive.
	Version     int64
	Consistency Consistency
}

// ReadActorValuesParams are the parameters of Actors.ReadActorValues.
type ReadActorValuesParams struct {
	Namespace   string
	Counter     string
	Consistency Consistency
}

// Actors stores the actor model: per counter one row per actor holding its
// absolute value, last write (highest version) wins.
type Actors interface {
	// SetActorValue writes the actor's value at timestamp p.Version. A value
	// set at a higher version is left as it is; of two at the same version
	// the greater value wins on every replica. It is blind and idempotent.
	// A version below 1 is refused with an error and nothing is written.
	//
	// "Greater" at a tie is Cassandra's order, not numeric order: Cassandra
	// compares the two cells' 8-byte big-endian encodings byte by byte as
	// signed (Java) bytes. Measured on Cassandra 2.1.0, and the same code
	// in later releases: 1500 beats 1000, but 127 beats 128, 100 beats 200
	// and 1 beats -1. The embedded driver reproduces that order, so both
	// drivers, every replica and every arrival order settle on the same
	// value; callers should rely on that agreement, not on which value it
	// is, and should never write two values at one version on purpose.
	SetActorValue(ctx context.Context, p *SetActorValueParams) error

	// ReadActorValues returns every actor's value, sorted by actor. A counter
	// never set returns no values, not ErrNotFound.
	ReadActorValues(ctx context.Context, p *ReadActorValuesParams) ([]ActorValue, error)

	// ListActorCounters returns the counters with at least one actor value,
	// in namespace p.Namespace (every namespace when empty), sorted.
	ListActorCounters(ctx context.Context, p *ListCountersParams) ([]CounterKey, error)
}

// AddNativeParams are the parameters of NativeCounters.AddNative.
type AddNativeParams struct {
	Namespace   string
	Counter     string
	Delta       int64
	Consistency Consistency
}

// ReadNativeParams are the parameters of NativeCounters.ReadNative.
type ReadNativeParams struct {
	Namespace   string
	Counter     string
	Consistency Consistency
}

// NativeCounters is the native baseline (the “Counters” design notes): a Cassandra counter
// column, and an atomic add on the embedded store. An add is not
// idempotent: replaying it, or retrying one whose outcome was unknown,
// may count twice.
type NativeCounters interface {
	// AddNative adds p.Delta to the counter. A sum beyond the int64 range
	// wraps around on Cassandra (the server adds Java longs); the embedded
	// driver refuses such an add with an error and changes nothing.
	AddNative(ctx context.Context, p *AddNativeParams) error

	// ReadNative returns the counter's value; 0 for a counter never added to.
	ReadNative(ctx context.Context, p *ReadNativeParams) (int64, error)

	// ListNativeCounters returns the counters ever added to, in namespace
	// p.Namespace (every namespace when empty), sorted.
	ListNativeCounters(ctx context.Context, p *ListCountersParams) ([]CounterKey, error)
}

// CASValue is the stored value of a counter of the cas model.
type CASValue struct {
	// Exists is false for a counter never written; Value is then 0.
	Exists bool
	Value  int64
}

// ReadCASParams are the parameters of CASCounters.ReadCAS.
type ReadCASParams struct {
	Namespace string
	Counter   string
	// Consistency of a plain read (Default: the driver's read level).
	Consistency Consistency
	// Serial reads through Paxos (Cassandra SERIAL, whatever the level),
	// finishing any round in progress first: a
	// linearizable read, for a caller that shows the value. It costs a
	// Paxos round; a compare-and-set loop does not need it, because the
	// compare-and-set checks the value it read anyway and a stale read
	// costs one more round only when it is stale.
	Serial bool
}

// CompareAndSetCASParams are the parameters of CASCounters.CompareAndSetCAS.
type CompareAndSetCASParams struct {
	Namespace string
	Counter   string
	// Expect is the value the counter must hold for the set to apply
	// (Expect.Exists false: the counter must not exist yet, and
	// Expect.Value is ignored).
	Expect CASValue
	// Value is the new value.
	Value int64
	// Consistency is the commit level of the lightweight transaction.
	Consistency Consistency
}

// CASResult is the outcome of CompareAndSetCAS.
type CASResult struct {
	// Applied is true when the new value was stored.
	Applied bool
	// Current is the stored value after the call: the one that made the
	// set fail when it did not apply (Exists false if the counter does not
	// exist), p.Value when it did.
	Current CASValue
}

// CASCounters is the compare-and-set baseline (“Highly Available Counters Using Cassandra”, linearizable
// counter): a plain value changed only by lightweight transactions.
type CASCounters interface {
	// ReadCAS returns the counter's value.
	ReadCAS(ctx context.Context, p *ReadCASParams) (CASValue, error)

	// CompareAndSetCAS stores p.Value if the counter holds p.Expect,
	// atomically with the check. A timeout returns ErrUnknownOutcome: the
	// set may still apply.
	CompareAndSetCAS(ctx context.Context, p *CompareAndSetCASParams) (CASResult, error)

	// ListCASCounters returns the counters ever set, in namespace
	// p.Namespace (every namespace when empty), sorted.
	ListCASCounters(ctx context.Context, p *ListCountersParams) ([]CounterKey, error)
}
