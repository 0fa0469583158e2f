// Package randomid makes the random identifiers Abacus needs: mutator
// ids, ledger actor ids, fallback request ids, consumer and lock holder
// names, unique test names. One maker, so they all draw from the same
// source the same way.
package randomid

import (
	"crypto/rand"
	"encoding/hex"
)

// Hex returns n random bytes from crypto/rand as 2n lower-case hex digits.
func Hex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}
