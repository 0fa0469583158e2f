package apikey

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// tokenPrefix marks Abacus tokens so that secret scanners and people can
// recognise one in a log or a repository.
const tokenPrefix = "abk_"

// secretBytes is the secret's entropy: 256 bits, far beyond guessing.
const secretBytes = 32

// maxIDLen bounds IDs so that a token's length is bounded too.
const maxIDLen = 64

// ErrMalformedToken means a string is not an Abacus token at all.
var ErrMalformedToken = errors.New("malformed API key")

// Token is a parsed token.
type Token struct {
	ID     string
	Secret []byte
}

// String returns the token's text form.
func (t Token) String() string {
	return tokenPrefix + t.ID + "_" + base64.RawURLEncoding.EncodeToString(t.Secret)
}

// newToken makes a token with a fresh secret for id.
func newToken(id string) Token {
	secret := make([]byte, secretBytes)
	_, _ = rand.Read(secret) // crypto/rand.Read never fails
	return Token{ID: id, Secret: secret}
}

// ParseToken parses "abk_<id>_<secret>". IDs hold no '_', so the first one
// after the prefix ends the ID whatever the secret's base64url holds.
func ParseToken(s string) (Token, error) {
	rest, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok {
		return Token{}, fmt.Errorf("%w: it does not start with %q", ErrMalformedToken, tokenPrefix)
	}
	id, enc, ok := strings.Cut(rest, "_")
	if !ok {
		return Token{}, fmt.Errorf("%w: no secret after the id", ErrMalformedToken)
	}
	if err := CheckID(id); err != nil {
		return Token{}, fmt.Errorf("%w: %w", ErrMalformedToken, err)
	}
	if base64.RawURLEncoding.DecodedLen(len(enc)) != secretBytes {
		return Token{}, fmt.Errorf("%w: the secret is not %d bytes", ErrMalformedToken, secretBytes)
	}
	secret, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil || len(secret) != secretBytes {
		return Token{}, fmt.Errorf("%w: the secret is not base64url", ErrMalformedToken)
	}
	return Token{ID: id, Secret: secret}, nil
}

// CheckID reports whether id can name a key: 1 to 64 of a-z, 0-9 and '-'.
func CheckID(id string) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("a key id has 1 to %d characters, not %d", maxIDLen, len(id))
	}
	for i := range len(id) {
		c := id[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return fmt.Errorf("a key id has only a-z, 0-9 and '-', not %q", c)
		}
	}
	return nil
}
