package abacus

import (
	"context"
	"fmt"

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
	o := nc.ledgerOptions()
	if err := o.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("%w: ledger options: %v", ErrInvalid, err)
	}
	if o.Floored {
		// The floor's argument needs every read of the rows to see every
		// credit an earlier read saw, and the rights record's
		// compare-and-set to be serial across the whole cluster: levels
		// below a quorum need not meet, and a read at a local level may
		// miss a credit another data center's earlier read saw.
		for _, cl := range []driver.Consistency{nc.ReadConsistency, nc.WriteConsistency} {
			switch cl {
			case driver.Default, driver.Quorum, driver.EachQuorum, driver.All:
			default:
				return fmt.Errorf("%w: a ledger floor needs reads and writes at QUORUM, EACH_QUORUM or ALL (or DEFAULT, the server's level), not %v", ErrInvalid, cl)
			}
		}
	}
	return nil
}

func (ledgerModel) storedOptions(nc NamespaceConfig) map[string]string {
	return nc.ledgerOptions().Stored()
}

func (ledgerModel) loadOptions(ns *Namespace, stored map[string]string) error {
	o, err := ledger.OptionsFromStored(stored)
	if err != nil {
		return fmt.Errorf("namespace %q has corrupt ledger options: %w", ns.Name, err)
	}
	ns.Ledger = &o
	return nil
}

// LedgerOptions configure a namespace of model ledger: history length,
// mode, retry count and claim TTL (see the fields). Zero fields
// take the documented defaults; a created namespace reports them filled
// in, with RetryCount 0 for "no resubmission". They are the ledger
// engine's own options, under the name users spell them by.
type LedgerOptions = ledger.Options

// LedgerMode is how a ledger namespace recognises retried requests.
type LedgerMode = ledger.Mode

// The ledger modes. LedgerModeExact is the default.
const (
	LedgerModeExact                      = ledger.ModeExact
	LedgerModeConcurrentRetriesMayDouble = ledger.ModeConcurrentRetriesMayDouble
)

func (c NamespaceConfig) ledgerOptions() LedgerOptions {
	if c.Ledger == nil {
		return LedgerOptions{}
	}
	return *c.Ledger
}

func (ledgerModel) list(ctx context.Context, d driver.Driver, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.ListLedgers(ctx, p)
}
