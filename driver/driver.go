package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Drivers wrap them with detail; callers test with errors.Is.
var (
	// ErrNotFound means the requested record does not exist.
	ErrNotFound = errors.New("not found")

	// ErrExists means a create found a record with the same key already present.
	ErrExists = errors.New("already exists")

	// ErrUnavailable means the store could not reach enough replicas to even
	// attempt the operation at the requested consistency. Nothing was applied.
	ErrUnavailable = errors.New("not enough replicas available")

	// ErrUnknownOutcome means a write was sent but its result is unknown: it
	// timed out or the connection failed after the request left. The write may
	// or may not have been applied, and may still be applied later.
	ErrUnknownOutcome = errors.New("write outcome unknown")

	// ErrLocked means the embedded store's data directory is held by another
	// process.
	ErrLocked = errors.New("data directory is locked by another process")

	// ErrClosed means the driver has been closed.
	ErrClosed = errors.New("driver is closed")

	// ErrOverflow means a store-side arithmetic update (the embedded native
	// counter's add) would leave the int64 range. Nothing was changed.
	ErrOverflow = errors.New("value would leave the int64 range")
)

// Consistency is the number of replicas that must answer an operation.
// The embedded driver has one replica and accepts every level.
type Consistency uint8

// Consistency levels, named as in Cassandra.
const (
	// Default lets the driver use the level from its own configuration.
	Default Consistency = iota
	One
	Two
	Three
	Quorum
	All
	LocalQuorum
	EachQuorum
	LocalOne
	Any
)

var consistencyNames = [...]string{
	Default:     "DEFAULT",
	One:         "ONE",
	Two:         "TWO",
	Three:       "THREE",
	Quorum:      "QUORUM",
	All:         "ALL",
	LocalQuorum: "LOCAL_QUORUM",
	EachQuorum:  "EACH_QUORUM",
	LocalOne:    "LOCAL_ONE",
	Any:         "ANY",
}

func (c Consistency) String() string {
	if int(c) < len(consistencyNames) {
		return consistencyNames[c]
	}
	return fmt.Sprintf("Consistency(%d)", uint8(c))
}

// ParseConsistency parses a level name such as "QUORUM" or "local_one".
// The empty string parses as Default.
func ParseConsistency(s string) (Consistency, error) {
	if s == "" {
		return Default, nil
	}
	u := strings.ToUpper(strings.TrimSpace(s))
	for i, name := range consistencyNames {
		if name == u {
			return Consistency(i), nil
		}
	}
	return Default, fmt.Errorf("unknown consistency level %q (want one of ONE, TWO, THREE, QUORUM, ALL, LOCAL_QUORUM, EACH_QUORUM, LOCAL_ONE, ANY)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (c Consistency) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Consistency) UnmarshalText(b []byte) error {
	v, err := ParseConsistency(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Micros converts t to a write timestamp in microseconds since the Unix epoch.
func Micros(t time.Time) int64 { return t.UnixMicro() }

// TimeSource is implemented by stores with clocks of their own (Cassandra
// coordinators). Every timestamp Abacus writes comes from its processes'
// clocks, and the models' margins (GC grace, rollup delay) assume those
// clocks agree; comparing each process with the store is how a process
// finds out that its clock has drifted. The embedded store, written by one
// process only, has no clock of its own.
type TimeSource interface {
	// StoreTime returns the store's current time, as one of its nodes
	// reads it (to the millisecond on Cassandra).
	StoreTime(ctx context.Context) (time.Time, error)
}

// Driver is everything a storage backend provides.
type Driver interface {
	Actors
	APIKeys
	CASCounters
	Events
	Ledgers
	Lifecycle
	Namespaces
	NativeCounters
	Shards
	Queues

	// Name identifies the backend ("embedded" or "cassandra") in logs and metrics.
	Name() string

	// Close releases the backend's resources. Operations after Close, and a
	// second Close, return ErrClosed.
	Close() error
}
