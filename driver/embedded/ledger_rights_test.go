package embedded

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

func FuzzDecodeLedgerRights(f *testing.F) {
	f.Add(encodeRights(driver.LedgerRights{Version: 1, State: []byte("granted")}))
	f.Add(encodeRights(driver.LedgerRights{Version: math.MaxInt64}))
	f.Add([]byte{rightsVersion, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{rightsVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRights(b)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("error %v does not wrap errCorrupt", err)
			}
			return
		}
		if r.Version < 1 {
			t.Fatalf("decodeRights(%x) accepted version %d", b, r.Version)
		}
		if got := encodeRights(r); !bytes.Equal(got, b) {
			t.Fatalf("decodeRights(%x) = %+v, which re-encodes as %x", b, r, got)
		}
	})
}

func TestDecodeLedgerRightsRefusesMalformed(t *testing.T) {
	t.Parallel()
	good := encodeRights(driver.LedgerRights{Version: 3, State: []byte{1, 2}})
	for name, b := range map[string][]byte{
		"empty":            {},
		"future version":   append([]byte{2}, good[1:]...),
		"truncated":        good[:rightsHeaderLen-1],
		"record version 0": encodeRights(driver.LedgerRights{State: []byte{1}}),
		"negative version": encodeRights(driver.LedgerRights{Version: -1}),
	} {
		if r, err := decodeRights(b); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: decodeRights(%x) = %+v, %v; want errCorrupt", name, b, r, err)
		}
	}
	if r, err := decodeRights(good); err != nil || r.Version != 3 || !bytes.Equal(r.State, []byte{1, 2}) {
		t.Errorf("decodeRights(good) = %+v, %v", r, err)
	}
}
