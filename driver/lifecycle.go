package driver

import (
	"context"
	"time"
)

// Cut is a recorded cut of a counter, or of every counter of a namespace
// (Counter empty): from At on, the counter is stored under a new
// generation (package lifecycle).
type Cut struct {
	Counter string
	// At is in microseconds since the Unix epoch.
	At int64
	// DeletesNamespace marks a namespace-wide cut that also deletes the
	// namespace.
	DeletesNamespace bool
}

// AddCutParams are the parameters of Lifecycle.AddCut.
type AddCutParams struct {
	Namespace string
	Cut       Cut
}

// ReadCutsParams are the parameters of Lifecycle.ReadCuts.
type ReadCutsParams struct {
	Namespace string
}

// DropCutsParams are the parameters of Lifecycle.DropCuts.
type DropCutsParams struct {
	Namespace string
	Cuts      []Cut
}

// PurgeCounterParams are the parameters of Lifecycle.PurgeCounter.
type PurgeCounterParams struct {
	Namespace string
	// Counter is the stored name: one generation of a counter.
	Counter string
	// Model is the namespace's model, which says which tables hold it.
	Model string
}

// DeleteNamespaceParams are the parameters of Lifecycle.DeleteNamespace.
type DeleteNamespaceParams struct {
	Name string
	// CreatedAt is the creation time of the record to remove: a record
	// of the name made at another time (the namespace made again) stays.
	CreatedAt time.Time
}

// Lifecycle stores cuts and removes what they have made unreachable.
type Lifecycle interface {
	// AddCut records a cut. Writing the same cut again is harmless. It is
	// acknowledged only once every later ReadCuts of the namespace, from
	// any process, returns it (on Cassandra: written and read at a quorum
	// at least).
	AddCut(ctx context.Context, p *AddCutParams) error

	// ReadCuts returns every cut of the namespace, in no particular order.
	ReadCuts(ctx context.Context, p *ReadCutsParams) ([]Cut, error)

	// DropCuts removes the given cuts; absent ones are ignored.
	DropCuts(ctx context.Context, p *DropCutsParams) error

	// PurgeCounter deletes everything stored under one stored counter
	// name of the model, for good, leaving other counters alone: the name
	// is never written again (a generation that ended), so the deletes may
	// shadow any write to it, at any timestamp — an actor's version or an
	// event's time may be anything. Purging a name that holds nothing is
	// harmless.
	PurgeCounter(ctx context.Context, p *PurgeCounterParams) error

	// DeleteNamespace removes a namespace's record if it is the one made at
	// p.CreatedAt, not its counters or its cuts, and returns ErrNotFound if
	// there is no such record (none, or one made at another time).
	DeleteNamespace(ctx context.Context, p *DeleteNamespaceParams) error
}
