package actor

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/abacusdb/abacus/crdt"
	"github.com/abacusdb/abacus/driver"
)

// ErrInvalid means a set is malformed. Nothing was written.
var ErrInvalid = errors.New("invalid actor set")

// ErrOverflow means the sum of the actors' values leaves the int64 range.
var ErrOverflow = errors.New("sum of actor values leaves the int64 range")

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

// Sum adds every actor's latest value.
func Sum(vals []driver.ActorValue) (int64, error) {
	var s int64
	for _, v := range vals {
		n, ok := crdt.AddInt64(s, v.Value)
		if !ok {
			return 0, ErrOverflow
		}
		s = n
	}
	return s, nil
}
