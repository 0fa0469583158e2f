package embedded

import (
	"bytes"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// FuzzDecodeAPIKey checks that the API key decoder refuses or round-trips
// every input: whatever it accepts encodes back to the same bytes.
func FuzzDecodeAPIKey(f *testing.F) {
	for _, k := range []driver.APIKey{
		{ID: "first-admin", Scopes: []string{"*:admin"}},
		{
			ID: "k7q2m9x4p1", Name: "billing", Scopes: []string{"ns:likes:write", "queue:*:read"},
			KDF: "argon2id;v=19;m=19456;t=2;p=1", Salt: []byte("0123456789abcdef"), Hash: bytes.Repeat([]byte{7}, 32),
			RatePerSecond: 12.5, Burst: 25, CreatedAt: time.Unix(1_800_000_000, 42).UTC(),
		},
	} {
		f.Add(encodeAPIKey(&k))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := decodeAPIKey(b)
		if err != nil {
			return
		}
		if got := encodeAPIKey(k); !bytes.Equal(got, b) {
			t.Fatalf("decoded %+v re-encodes as %x, not %x", k, got, b)
		}
	})
}
