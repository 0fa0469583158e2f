package lifecycle

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/abacusdb/abacus/internal/names"
)

// Separator joins a counter's name and its generation in a stored name. It
// is a Unicode noncharacter, valid UTF-8 (so Cassandra's text columns take
// it) and refused in every name a user gives, so a stored name is never
// mistaken for another counter's.
const Separator = names.Reserved

// genDigits is the width of a generation in a stored name: 16 hex digits,
// so the stored names of one counter sort by generation.
const genDigits = 16

// StoredName is the name counter's data is kept under in generation gen.
// Generation 0 (a counter never cut) keeps the counter's own name, which
// is also how earlier releases stored every counter.
func StoredName(counter string, gen int64) string {
	if gen == 0 {
		return counter
	}
	return fmt.Sprintf("%s%s%0*x", counter, Separator, genDigits, uint64(gen))
}

// SplitStored is the inverse of StoredName. ok is false for a name no
// StoredName returns (a separator not followed by exactly one generation),
// which callers skip rather than guess at.
func SplitStored(stored string) (counter string, gen int64, ok bool) {
	i := strings.Index(stored, Separator)
	if i < 0 {
		return stored, 0, true
	}
	digits := stored[i+len(Separator):]
	if len(digits) != genDigits || strings.ToLower(digits) != digits {
		return "", 0, false
	}
	u, err := strconv.ParseUint(digits, 16, 64)
	if err != nil || u == 0 || u > 1<<63-1 {
		return "", 0, false
	}
	return stored[:i], int64(u), true
}
