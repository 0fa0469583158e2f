package names

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/abacusdb/abacus/internal/outcome"
)

// MaxLen is the longest name, in bytes.
const MaxLen = 256

// Reserved is refused in every name: U+FFFF, a Unicode noncharacter,
// which separates a counter's name from its generation in the names
// counters are stored under (package lifecycle).
const Reserved = "\uffff"

// Check checks any name; kind ("namespace", "counter", ...) begins its
// messages. Its errors wrap outcome.ErrInvalid.
func Check(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: %s name is empty", outcome.ErrInvalid, kind)
	case len(name) > MaxLen:
		return fmt.Errorf("%w: %s name is %d bytes, the limit is %d", outcome.ErrInvalid, kind, len(name), MaxLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %s name is not valid UTF-8", outcome.ErrInvalid, kind)
	case strings.Contains(name, Reserved):
		return fmt.Errorf("%w: %s name holds U+FFFF, which Abacus reserves for the names it stores counters under", outcome.ErrInvalid, kind)
	}
	return nil
}

// CheckNew checks the name of a namespace or queue about to be created.
func CheckNew(kind, name string) error {
	if err := Check(kind, name); err != nil {
		return err
	}
	if !alnum(name[0]) {
		return fmt.Errorf("%w: %s name %q must start with a letter or digit", outcome.ErrInvalid, kind, name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !alnum(c) && c != '_' && c != '-' && c != '.' && c != ':' {
			return fmt.Errorf("%w: %s name %q has %q at byte %d; use ASCII letters, digits, '_', '-', '.' and ':'", outcome.ErrInvalid, kind, name, rune(c), i)
		}
	}
	return nil
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
