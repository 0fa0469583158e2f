package ledger

import (
	"fmt"
	"strconv"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Keys of the options in the stored namespace record.
const (
	storedHistoryLength = "history_length"
	storedStrict        = "strict"
	storedRetryCount    = "retry_count"
	storedClaimTTL      = "claim_ttl_seconds"
	// storedEntryRetention is missing from namespaces made before ledgers
	// had a history; they keep none (0), as they did.
	storedEntryRetention = "entry_retention_seconds"
	// storedFloor is there only for a namespace with a floor.
	storedFloor = "floor"
	// storedActorMaxAge is missing from namespaces made before folding;
	// their actors never retire by age (0), as before.
	storedActorMaxAge = "actor_max_age_seconds"
)

// Stored is the options' stored form: every option, defaults filled in, so
// a later release with other defaults does not change existing
// namespaces. No resubmission (a negative RetryCount) is stored as 0.
func (o Options) Stored() map[string]string {
	e := o.WithDefaults()
	m := map[string]string{
		storedHistoryLength: strconv.Itoa(e.HistoryLength),
		storedStrict:        strconv.FormatBool(e.Mode.claims()),
		storedRetryCount:    strconv.Itoa(max(e.RetryCount, 0)),
		storedClaimTTL:      strconv.FormatInt(int64(e.ClaimTTL/time.Second), 10),
		// No history (a negative retention) is stored as 0.
		storedEntryRetention: strconv.FormatInt(max(int64(e.EntryRetention/time.Second), 0), 10),
		// No retirement by age (a negative age) is stored as 0.
		storedActorMaxAge: strconv.FormatInt(max(int64(e.ActorMaxAge/time.Second), 0), 10),
	}
	if e.Floored {
		m[storedFloor] = strconv.FormatInt(e.Floor, 10)
	}
	return m
}

// keepsEntries reports whether writes store history entries; the zero
// retention is the default, which keeps them.
func (o Options) keepsEntries() bool { return o.EntryRetention >= 0 }

// OptionsFromStored reads stored options strictly: every key must be there
// and valid, since guessing would change how retries are treated. The
// result is the stored form: RetryCount 0 means no resubmission (see
// Effective).
func OptionsFromStored(m map[string]string) (Options, error) {
	get := func(k string) (string, error) {
		v, ok := m[k]
		if !ok {
			return "", fmt.Errorf("%s is missing", k)
		}
		return v, nil
	}
	for k := range m {
		switch k {
		case storedHistoryLength, storedStrict, storedRetryCount, storedClaimTTL, storedEntryRetention, storedFloor, storedActorMaxAge:
		default:
			// A key this release does not know was written by a newer
			// one, for a rule this server would not enforce (a floor, to
			// a release before floors): refusing the namespace is the
			// only safe answer.
			return Options{}, fmt.Errorf("unknown option %q (written by a newer release?)", k)
		}
	}
	var o Options
	v, err := get(storedHistoryLength)
	if err == nil {
		o.HistoryLength, err = strconv.Atoi(v)
	}
	if err != nil {
		return o, err
	}
	if v, err = get(storedStrict); err == nil {
		// Stored as "strict" since before modes had names; every stored
		// record spells it out, so changing the default changed no
		// existing namespace.
		var strict bool
		if strict, err = strconv.ParseBool(v); strict {
			o.Mode = ModeExact
		} else {
			o.Mode = ModeConcurrentRetriesMayDouble
		}
	}
	if err != nil {
		return o, err
	}
	if v, err = get(storedRetryCount); err == nil {
		o.RetryCount, err = strconv.Atoi(v)
	}
	if err != nil {
		return o, err
	}
	var secs int64
	if v, err = get(storedClaimTTL); err == nil {
		secs, err = strconv.ParseInt(v, 10, 64)
	}
	if err != nil {
		return o, err
	}
	if secs < 1 || secs > int64(driver.MaxClaimTTL/time.Second) {
		return o, fmt.Errorf("%s %d is out of range", storedClaimTTL, secs)
	}
	o.ClaimTTL = time.Duration(secs) * time.Second
	if v, ok := m[storedEntryRetention]; ok {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs < 0 || secs > int64(driver.MaxClaimTTL/time.Second) {
			return o, fmt.Errorf("%s %q is not a number of seconds within 0..%d", storedEntryRetention, v, int64(driver.MaxClaimTTL/time.Second))
		}
		o.EntryRetention = time.Duration(secs) * time.Second
	}
	if v, ok := m[storedActorMaxAge]; ok {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs < 0 || secs > int64(driver.MaxClaimTTL/time.Second) {
			return o, fmt.Errorf("%s %q is not a number of seconds within 0..%d", storedActorMaxAge, v, int64(driver.MaxClaimTTL/time.Second))
		}
		o.ActorMaxAge = time.Duration(secs) * time.Second
	}
	if v, ok := m[storedFloor]; ok {
		if o.Floor, err = strconv.ParseInt(v, 10, 64); err != nil {
			return o, fmt.Errorf("%s %q is not a number", storedFloor, v)
		}
		o.Floored = true
	}
	if o.RetryCount < 0 {
		return o, fmt.Errorf("%s %d is negative", storedRetryCount, o.RetryCount)
	}
	if err := o.WithDefaults().Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// Effective is what the engine runs stored options with: defaults filled
// in, and a stored RetryCount of 0 (no resubmission), EntryRetention of 0
// (no history) and ActorMaxAge of 0 (no retirement by age, as in
// namespaces made before folding) spelled as negative values.
func (o Options) Effective() Options {
	e := o.WithDefaults()
	if o.RetryCount == 0 {
		e.RetryCount = -1
	}
	if o.EntryRetention == 0 {
		e.EntryRetention = -1
	}
	if o.ActorMaxAge == 0 {
		e.ActorMaxAge = -1
	}
	return e
}
