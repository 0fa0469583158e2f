package apikey

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"

	"golang.org/x/crypto/argon2"
)

// kdfParams are argon2id's cost parameters. The defaults are the OWASP
// minimum for argon2id (19 MiB, two passes, one lane): about 24 ms on one
// core here (docs/benchmarks.md), which is nothing once per key per server and a great deal for
// someone guessing secrets from a stolen table. Tokens carry 256 random
// bits, so the KDF guards a stolen table, not a weak secret.
type kdfParams struct {
	MemoryKiB uint32
	Time      uint32
	Threads   uint8
}

var defaultKDF = kdfParams{MemoryKiB: 19 * 1024, Time: 2, Threads: 1}

const (
	saltBytes = 16
	hashBytes = 32
)

func (p kdfParams) String() string {
	return fmt.Sprintf("argon2id;v=%d;m=%d;t=%d;p=%d", argon2.Version, p.MemoryKiB, p.Time, p.Threads)
}

// parseKDF reads parameters written by String. Bounds keep a damaged or
// hostile record from making verification take unbounded memory or time.
func parseKDF(s string) (kdfParams, error) {
	var (
		p kdfParams
		v int
	)
	n, err := fmt.Sscanf(s, "argon2id;v=%d;m=%d;t=%d;p=%d", &v, &p.MemoryKiB, &p.Time, &p.Threads)
	switch {
	case err != nil || n != 4:
		return kdfParams{}, fmt.Errorf("unknown KDF %q", s)
	case v != argon2.Version:
		return kdfParams{}, fmt.Errorf("KDF %q: argon2 version %d, this build has %d", s, v, argon2.Version)
	case p.MemoryKiB < 8 || p.MemoryKiB > 1<<20 || p.Time < 1 || p.Time > 16 || p.Threads < 1 || p.Threads > 16:
		return kdfParams{}, fmt.Errorf("KDF %q: parameters out of range", s)
	case p.String() != s:
		return kdfParams{}, fmt.Errorf("KDF %q is not in its canonical form", s)
	}
	return p, nil
}

func (p kdfParams) hash(secret, salt []byte) []byte {
	return argon2.IDKey(secret, salt, p.Time, p.MemoryKiB, p.Threads, hashBytes)
}

// hashSecret returns a fresh salt and the secret's hash under p.
func (p kdfParams) hashSecret(secret []byte) (salt, hash []byte) {
	salt = make([]byte, saltBytes)
	_, _ = rand.Read(salt)
	return salt, p.hash(secret, salt)
}

// verify reports whether secret hashes to want under the stored KDF.
func verify(kdf string, salt, want, secret []byte) (bool, error) {
	p, err := parseKDF(kdf)
	if err != nil {
		return false, err
	}
	got := p.hash(secret, salt)
	return len(want) == len(got) && subtle.ConstantTimeCompare(got, want) == 1, nil
}
