package actor

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/outcome"
)

// ErrInvalid means a set is malformed. Nothing was written.
var ErrInvalid = outcome.Tag(outcome.ErrInvalid, errors.New("invalid actor set"))

// ErrOverflow means the set would take the sum of the actors' values, as
// this server reads it, outside the int64 range. Nothing was written.
var ErrOverflow = outcome.Tag(crdt.ErrOverflow, errors.New("the sum of the actors' values would leave the int64 range"))

// ErrVersionConflict means the actor's version is already stored with a
// different value. Nothing was written.
var ErrVersionConflict = outcome.Tag(outcome.ErrVersionConflict, errors.New("actor version already set with a different value"))

// MaxActorLen is the longest actor name, in bytes.
const MaxActorLen = 256

// MaxVersion is the highest version accepted. Cassandra write timestamps
// are signed 64-bit; the top is kept free so a delete could still win.
const MaxVersion = math.MaxInt64 - 1

// Validate checks an actor name and version.
func Validate(actor string, version int64) error {
	switch {
	case actor == "":
		return fmt.Errorf("%w: actor is empty", ErrInvalid)
	case len(actor) > MaxActorLen:
		return fmt.Errorf("%w: actor is %d bytes, the limit is %d", ErrInvalid, len(actor), MaxActorLen)
	case !utf8.ValidString(actor):
		return fmt.Errorf("%w: actor is not valid UTF-8", ErrInvalid)
	case version <= 0:
		return fmt.Errorf("%w: version must be positive (got %d): it orders an actor's sets", ErrInvalid, version)
	case version > MaxVersion:
		return fmt.Errorf("%w: version %d is above %d", ErrInvalid, version, int64(MaxVersion))
	}
	return nil
}

// detailed is a sentinel error whose message is the detail alone, which
// already says what the sentinel would.
type detailed struct {
	sentinel error
	msg      string
}

func (d *detailed) Error() string { return d.msg }
func (d *detailed) Unwrap() error { return d.sentinel }

// Sum adds every actor's latest value. Sets from different servers are
// blind writes that no one server can refuse exactly, so the sum is exact
// whatever they add up to.
func Sum(vals []driver.ActorValue) crdt.Wide {
	var s crdt.Wide
	for _, v := range vals {
		s.Add(v.Value)
	}
	return s
}

// Check decides, from the actors' values as read just before, whether a
// set of actor to value at version may be written. It refuses a value that
// differs from the one stored at the same version (the store would keep
// the greater of the two on every replica, so one writer would silently
// lose) and a set that would take the sum outside the int64 range. A set
// at a version older than the stored one changes nothing and is allowed,
// so a late retry still succeeds.
func Check(vals []driver.ActorValue, actor string, version, value int64) error {
	var rest crdt.Wide
	for _, v := range vals {
		if v.Actor != actor {
			rest.Add(v.Value)
			continue
		}
		switch {
		case v.Version == version && v.Value != value:
			return &detailed{ErrVersionConflict, fmt.Sprintf("actor %q has value %d at version %d, not %d; set a new value at a higher version", actor, v.Value, version, value)}
		case v.Version >= version:
			return nil // already stored, or superseded: the set is a no-op
		}
	}
	rest.Add(value)
	if _, ok := rest.Int64(); !ok {
		return &detailed{ErrOverflow, fmt.Sprintf("with %q at %d the actors' values would sum to %s, outside the int64 range", actor, value, rest)}
	}
	return nil
}
