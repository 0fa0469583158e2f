package queue

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

var receiptID = driver.MessageID{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

func TestReceiptRoundTrip(t *testing.T) {
	t.Parallel()
	r := receipt{Key: driver.MessageKey{Shard: 7, Due: time.UnixMilli(1_700_000_000_123).UTC(), ID: receiptID}, Deliveries: 2}
	s := r.String()
	if s != "1.7.1700000000123.6ba7b810-9dad-11d1-80b4-00c04fd430c8.2" {
		t.Fatalf("String = %s", s)
	}
	got, err := parseReceipt(s)
	if err != nil || got != r {
		t.Fatalf("parseReceipt = %+v, %v", got, err)
	}
	for _, bad := range []string{
		"", "1", "1.7.1700000000123.6ba7b810-9dad-11d1-80b4-00c04fd430c8",
		"2.7.1700000000123.6ba7b810-9dad-11d1-80b4-00c04fd430c8.2",
		"1.07.1700000000123.6ba7b810-9dad-11d1-80b4-00c04fd430c8.2",
		"1.-1.1700000000123.6ba7b810-9dad-11d1-80b4-00c04fd430c8.2",
		"1.4096.1700000000123.6ba7b810-9dad-11d1-80b4-00c04fd430c8.2",
		"1.7.+1700000000123.6ba7b810-9dad-11d1-80b4-00c04fd430c8.2",
		"1.7.1700000000123.6BA7B810-9DAD-11D1-80B4-00C04FD430C8.2",
		"1.7.1700000000123.6ba7b810-9dad-41d1-80b4-00c04fd430c8.2",
		"1.7.1700000000123.6ba7b810-9dad-11d1-80b4-00c04fd430c8.0",
		"1.7.1700000000123.6ba7b810-9dad-11d1-80b4-00c04fd430c8.2.",
		strings.Repeat("x", 10_000),
	} {
		if _, err := parseReceipt(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("parseReceipt(%.60q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// FuzzParseReceipt: receipts come from HTTP clients. The parser must not
// panic, and what it accepts must be exactly what String writes.
func FuzzParseReceipt(f *testing.F) {
	f.Add("1.7.1700000000123.6ba7b810-9dad-11d1-80b4-00c04fd430c8.2")
	f.Add("1.0.-5.6ba7b810-9dad-11d1-80b4-00c04fd430c8.1")
	f.Add("1.4095.9223372036854775807.00000000-0000-1000-8000-000000000000.1000")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseReceipt(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if got := r.String(); got != s {
			t.Fatalf("parseReceipt(%q) re-encodes as %q", s, got)
		}
		if !r.Key.ID.Valid() || r.Deliveries < 1 || r.Key.Shard < 0 {
			t.Fatalf("accepted %+v", r)
		}
	})
}

// FuzzParseID: ids come from HTTP clients (requeue) too.
func FuzzParseID(f *testing.F) {
	f.Add("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	f.Add("6BA7B810-9DAD-11D1-80B4-00C04FD430C8")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			return
		}
		if !id.Valid() || !strings.EqualFold(id.String(), s) {
			t.Fatalf("ParseID(%q) = %s", s, id)
		}
	})
}
