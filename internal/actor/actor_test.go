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

// The sum is a plain fold that never wraps: past the int64 edges it stays
// exact and only narrows with a flag.
func TestSum(t *testing.T) {
	t.Parallel()
	vals := []driver.ActorValue{{Actor: "P1", Value: 1500, Version: 2}, {Actor: "P2", Value: 500, Version: 1}, {Actor: "P3", Value: -40, Version: 9}}
	if s, ok := Sum(vals).Int64(); !ok || s != 1960 {
		t.Fatalf("Sum = %d, %v", s, ok)
	}
	if s, ok := Sum(nil).Int64(); !ok || s != 0 {
		t.Fatalf("empty Sum = %d, %v", s, ok)
	}
	for _, c := range []struct {
		vals  []int64
		exact string
		near  int64
	}{
		{[]int64{math.MaxInt64, 1}, "9223372036854775808", math.MaxInt64},
		{[]int64{math.MinInt64, -1}, "-9223372036854775809", math.MinInt64},
		{[]int64{math.MaxInt64, math.MaxInt64}, "18446744073709551614", math.MaxInt64},
	} {
		var in []driver.ActorValue
		for _, v := range c.vals {
			in = append(in, driver.ActorValue{Value: v})
		}
		s := Sum(in)
		if v, ok := s.Int64(); ok || v != c.near || s.String() != c.exact {
			t.Errorf("Sum(%v) = %s (%d, %v), want %s narrowed to %d", c.vals, s, v, ok, c.exact, c.near)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	vals := []driver.ActorValue{{Actor: "P1", Value: 1500, Version: 2}, {Actor: "P2", Value: math.MaxInt64 - 2000, Version: 1}}
	for name, c := range map[string]struct {
		actor          string
		version, value int64
		want           error
	}{
		"same value again":        {"P1", 2, 1500, nil},
		"other value, same ver":   {"P1", 2, 999, ErrVersionConflict},
		"older version":           {"P1", 1, 7, nil},
		"newer version":           {"P1", 3, 2000, nil},
		"newer version overflows": {"P1", 3, 2001, ErrOverflow},
		"new actor overflows":     {"P3", 1, 501, ErrOverflow},
		"new actor fits":          {"P3", 1, 500 - 1500 + 1500, nil},
		"new actor negative":      {"P3", 1, math.MinInt64, nil},
	} {
		err := Check(vals, c.actor, c.version, c.value)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: Check = %v, want %v", name, err, c.want)
		}
	}
}
