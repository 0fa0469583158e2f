package actor

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	if err := Validate("P1", 1); err != nil {
		t.Fatal(err)
	}
	if err := Validate(strings.Repeat("a", MaxActorLen), MaxVersion); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		actor   string
		version int64
	}{
		"empty actor":      {"", 1},
		"long actor":       {strings.Repeat("a", MaxActorLen+1), 1},
		"bad utf-8":        {"\xff", 1},
		"zero version":     {"a", 0},
		"negative version": {"a", -1},
		"top version":      {"a", math.MaxInt64},
	} {
		if err := Validate(c.actor, c.version); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The sum is a plain fold, but it must refuse to wrap around.
func TestSum(t *testing.T) {
	t.Parallel()
	vals := []driver.ActorValue{{Actor: "P1", Value: 1500, Version: 2}, {Actor: "P2", Value: 500, Version: 1}, {Actor: "P3", Value: -40, Version: 9}}
	if s, err := Sum(vals); err != nil || s != 1960 {
		t.Fatalf("Sum = %d, %v", s, err)
	}
	if s, err := Sum(nil); err != nil || s != 0 {
		t.Fatalf("empty Sum = %d, %v", s, err)
	}
	for _, vs := range [][]int64{{math.MaxInt64, 1}, {math.MinInt64, -1}, {math.MaxInt64, math.MaxInt64}} {
		var in []driver.ActorValue
		for _, v := range vs {
			in = append(in, driver.ActorValue{Value: v})
		}
		if _, err := Sum(in); !errors.Is(err, ErrOverflow) {
			t.Errorf("Sum(%v): %v, want ErrOverflow", vs, err)
		}
	}
}
