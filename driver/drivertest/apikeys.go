package drivertest

import (
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

func exerciseAPIKeys(t *testing.T, d driver.Driver) {
	t.Run("CreateGetListDelete", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		want := driver.APIKey{
			ID: unique("key"), Name: "billing", Scopes: []string{"ns:likes:write", "queue:*:read"},
			KDF: "argon2id;v=19;m=19456;t=2;p=1", Salt: []byte("0123456789abcdef"), Hash: []byte("0123456789abcdef0123456789abcdef"),
			RatePerSecond: 12.5, Burst: 25, CreatedAt: time.UnixMilli(1_800_000_000_123).UTC(),
		}
		if err := d.CreateAPIKey(c, &driver.CreateAPIKeyParams{Key: want}); err != nil {
			t.Fatal(err)
		}
		got, err := d.GetAPIKey(c, &driver.GetAPIKeyParams{ID: want.ID})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("GetAPIKey = %+v, want %+v", *got, want)
		}
		other := want
		other.Hash = []byte("another hash, another secret....")
		if err := d.CreateAPIKey(c, &driver.CreateAPIKeyParams{Key: other}); !errors.Is(err, driver.ErrExists) {
			t.Fatalf("second CreateAPIKey with the same id: %v, want ErrExists", err)
		}
		if got, err := d.GetAPIKey(c, &driver.GetAPIKeyParams{ID: want.ID}); err != nil || !reflect.DeepEqual(got.Hash, want.Hash) {
			t.Fatalf("after a refused create the key is %+v, %v; want it unchanged", got, err)
		}
		all, err := d.ListAPIKeys(c, &driver.ListAPIKeysParams{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for i, k := range all {
			if i > 0 && all[i-1].ID >= k.ID {
				t.Fatalf("ListAPIKeys not sorted by id: %q before %q", all[i-1].ID, k.ID)
			}
			found = found || k.ID == want.ID
		}
		if !found {
			t.Fatalf("ListAPIKeys does not list %q", want.ID)
		}
		if err := d.DeleteAPIKey(c, &driver.DeleteAPIKeyParams{ID: want.ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.GetAPIKey(c, &driver.GetAPIKeyParams{ID: want.ID}); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("GetAPIKey after delete: %v, want ErrNotFound", err)
		}
		if err := d.DeleteAPIKey(c, &driver.DeleteAPIKeyParams{ID: want.ID}); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("second DeleteAPIKey: %v, want ErrNotFound", err)
		}
		// A deleted ID may be created again: the first-start admin key is
		// made again when every key has been revoked.
		if err := d.CreateAPIKey(c, &driver.CreateAPIKeyParams{Key: other}); err != nil {
			t.Fatalf("CreateAPIKey after delete: %v", err)
		}
		if err := d.DeleteAPIKey(c, &driver.DeleteAPIKeyParams{ID: want.ID}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("UnstorableLimitsAreRefused", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		for _, k := range []driver.APIKey{
			{Burst: driver.MaxAPIKeyBurst + 1, RatePerSecond: 1},
			{Burst: -1, RatePerSecond: 1},
			{RatePerSecond: math.NaN()},
			{RatePerSecond: math.Inf(1)},
			{RatePerSecond: -1},
		} {
			k.ID, k.KDF, k.Salt, k.Hash = unique("key-bad"), "argon2id", []byte{1}, []byte{1}
			if err := d.CreateAPIKey(c, &driver.CreateAPIKeyParams{Key: k}); err == nil || errors.Is(err, driver.ErrExists) {
				t.Errorf("CreateAPIKey(rate %v, burst %d) = %v, want a refusal", k.RatePerSecond, k.Burst, err)
			}
			if _, err := d.GetAPIKey(c, &driver.GetAPIKeyParams{ID: k.ID}); !errors.Is(err, driver.ErrNotFound) {
				t.Errorf("GetAPIKey after a refused create: %v, want ErrNotFound", err)
			}
		}
		if _, err := d.ListAPIKeys(c, &driver.ListAPIKeysParams{}); err != nil {
			t.Fatalf("ListAPIKeys after refused creates: %v", err)
		}
		largest := driver.APIKey{ID: unique("key-max"), KDF: "argon2id", Salt: []byte{1}, Hash: []byte{1}, RatePerSecond: 1e300, Burst: driver.MaxAPIKeyBurst}
		if err := d.CreateAPIKey(c, &driver.CreateAPIKeyParams{Key: largest}); err != nil {
			t.Fatalf("CreateAPIKey at the largest limits: %v", err)
		}
		got, err := d.GetAPIKey(c, &driver.GetAPIKeyParams{ID: largest.ID})
		if err != nil || got.Burst != largest.Burst || got.RatePerSecond != largest.RatePerSecond {
			t.Fatalf("GetAPIKey at the largest limits = %+v, %v", got, err)
		}
		if err := d.DeleteAPIKey(c, &driver.DeleteAPIKeyParams{ID: largest.ID}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("RacingCreatesOneWins", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		id := unique("key-race")
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			created int
		)
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := driver.APIKey{ID: id, KDF: "argon2id", Salt: []byte{byte(i + 1)}, Hash: []byte{byte(i + 1)}}
				err := d.CreateAPIKey(c, &driver.CreateAPIKeyParams{Key: k})
				switch {
				case err == nil:
					mu.Lock()
					created++
					mu.Unlock()
				case !errors.Is(err, driver.ErrExists):
					t.Errorf("racing CreateAPIKey: %v", err)
				}
			}()
		}
		wg.Wait()
		if created != 1 {
			t.Fatalf("%d of 4 racing creates of one id succeeded, want 1", created)
		}
		if err := d.DeleteAPIKey(c, &driver.DeleteAPIKeyParams{ID: id}); err != nil {
			t.Fatal(err)
		}
	})
}
