package names

import (
	"errors"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/internal/outcome"
)

func TestNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		any, creation bool
	}{
		{"default", true, true},
		{"Orders-2026.eu:west_1", true, true},
		{"9lives", true, true},
		{strings.Repeat("a", MaxLen), true, true},
		{"", false, false},
		{strings.Repeat("a", MaxLen+1), false, false},
		{"a\xffb", false, false},
		{"../etc", true, false},
		{"..", true, false},
		{".hidden", true, false},
		{"-flag", true, false},
		{"a/b", true, false},
		{"a b", true, false},
		{"zähler", true, false},
		{"a%2Fb", true, false},
		{"ann@example.com", true, false},
		{"a\uffffb", false, false},
		{"\uffff", false, false},
	} {
		if err := Check("counter", tc.name); (err == nil) != tc.any || err != nil && !errors.Is(err, outcome.ErrInvalid) {
			t.Errorf("Check(%q) = %v, want ok %v", tc.name, err, tc.any)
		}
		if err := CheckNew("queue", tc.name); (err == nil) != tc.creation || err != nil && !errors.Is(err, outcome.ErrInvalid) {
			t.Errorf("CheckNew(%q) = %v, want ok %v", tc.name, err, tc.creation)
		}
	}
}
