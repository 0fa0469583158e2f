package abacus

import (
	"fmt"
	"strconv"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/ledger"
)

// ledgerModel is the model of ledger namespaces: they hold ledgers, not
// counters, so only the namespace part is here; the ledger operations are
// in ledger.go.
type ledgerModel struct{}

func (ledgerModel) defaultType() string { return "" }

func (ledgerModel) checkNamespace(nc NamespaceConfig) error {
	if nc.Type != "" {
		return fmt.Errorf("%w: type %q: ledger namespaces have no type", ErrInvalid, nc.Type)
	}
	if err := nc.ledgerOptions().engine().Validate(); err != nil {
		return fmt.Errorf("%w: ledger options: %v", ErrInvalid, err)
	}
	return nil
}

func (ledgerModel) storedOptions(nc NamespaceConfig) map[string]string {
	return nc.ledgerOptions().toMap()
}

func (ledgerModel) loadOptions(ns *Namespace, stored map[string]string) error {
	o, err := ledgerOptionsFromMap(stored)
	if err != nil {
		return fmt.Errorf("namespace %q has corrupt ledger options: %w", ns.Name, err)
	}
	ns.Ledger = &o
	return nil
}

// LedgerOptions configure a namespace of model ledger. Zero fields take
// the documented defaults; a created namespace reports them filled in.
type LedgerOptions struct {
	// HistoryLength is how many request ids each actor keeps per section
	// (credits, debits); a retry is recognised while the request is among
	// them. Default 10, at most 1000.
	HistoryLength int
	// Strict claims every request id with a lightweight transaction before
	// applying it, so that two processes receiving the same request at the
	// same moment cannot both apply it. It costs a Paxos round per write.
	// Default false.
	Strict bool
	// RetryCount is how many times a write whose outcome is unknown is
	// resubmitted before the call returns ErrUnknownOutcome. Default 10; a
	// negative value means none (reported as 0).
	RetryCount int
	// ClaimTTL is how long a strict-mode claim lives; a retry within it is
	// recognised even after the request left the history. It must exceed
	// the longest delay after which callers retry and the store's hint
	// window. Default 24h; whole seconds.
	ClaimTTL time.Duration
}

// Keys of the ledger options in the stored namespace record.
const (
	optHistoryLength = "history_length"
	optStrict        = "strict"
	optRetryCount    = "retry_count"
	optClaimTTL      = "claim_ttl_seconds"
)

func (c NamespaceConfig) ledgerOptions() LedgerOptions {
	if c.Ledger == nil {
		return LedgerOptions{}
	}
	return *c.Ledger
}

// engine converts to the engine's options, defaults filled in.
func (o LedgerOptions) engine() ledger.Options {
	return ledger.Options{
		HistoryLength: o.HistoryLength, Strict: o.Strict, RetryCount: o.RetryCount, ClaimTTL: o.ClaimTTL,
	}.WithDefaults()
}

// toMap stores every option, defaults resolved, so a later release with
// other defaults does not change existing namespaces.
func (o LedgerOptions) toMap() map[string]string {
	e := o.engine()
	return map[string]string{
		optHistoryLength: strconv.Itoa(e.HistoryLength),
		optStrict:        strconv.FormatBool(e.Strict),
		optRetryCount:    strconv.Itoa(max(e.RetryCount, 0)),
		optClaimTTL:      strconv.FormatInt(int64(e.ClaimTTL/time.Second), 10),
	}
}

// ledgerOptionsFromMap reads stored options strictly: every key must be
// there and valid, since guessing would change how retries are treated.
func ledgerOptionsFromMap(m map[string]string) (LedgerOptions, error) {
	get := func(k string) (string, error) {
		v, ok := m[k]
		if !ok {
			return "", fmt.Errorf("%s is missing", k)
		}
		return v, nil
	}
	var o LedgerOptions
	v, err := get(optHistoryLength)
	if err == nil {
		o.HistoryLength, err = strconv.Atoi(v)
	}
	if err != nil {
		return o, err
	}
	if v, err = get(optStrict); err == nil {
		o.Strict, err = strconv.ParseBool(v)
	}
	if err != nil {
		return o, err
	}
	if v, err = get(optRetryCount); err == nil {
		o.RetryCount, err = strconv.Atoi(v)
	}
	if err != nil {
		return o, err
	}
	var secs int64
	if v, err = get(optClaimTTL); err == nil {
		secs, err = strconv.ParseInt(v, 10, 64)
	}
	if err != nil {
		return o, err
	}
	if secs < 1 || secs > int64(driver.MaxClaimTTL/time.Second) {
		return o, fmt.Errorf("%s %d is out of range", optClaimTTL, secs)
	}
	o.ClaimTTL = time.Duration(secs) * time.Second
	if o.RetryCount < 0 {
		return o, fmt.Errorf("%s %d is negative", optRetryCount, o.RetryCount)
	}
	if err := o.engine().Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// target converts the namespace's stored options for the engine. Stored
// retry_count 0 means none, which the engine spells as a negative count.
func (o LedgerOptions) target() ledger.Options {
	e := o.engine()
	if o.RetryCount == 0 {
		e.RetryCount = -1
	}
	return e
}
