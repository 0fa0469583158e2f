package abacus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/ledger"
	"github.com/abacusdb/abacus/internal/randomid"
)

// DefaultLedgerNamespace is used by the ledger methods when no namespace is
// given. It is created (model ledger, default options) on first use.
const DefaultLedgerNamespace = "ledgers"

// LedgerUpdate is one change to a ledger.
type LedgerUpdate struct {
	// Namespace defaults to DefaultLedgerNamespace.
	Namespace string
	// Ledger is the ledger's name (1 to 256 bytes of UTF-8).
	Ledger string
	// Amount is added: positive for a credit, negative for a debit. Zero is
	// refused.
	Amount int64
	// RequestID identifies the request: a retry with the same id is
	// recognised and not applied again (see LedgerOptions). A random id is
	// generated when it is empty. At most 256 bytes of UTF-8.
	RequestID string
}

// LedgerResult is the outcome of a ledger update.
type LedgerResult struct {
	Namespace string
	Ledger    string
	// RequestID is the update's request id (generated if none was given).
	// It is set even when the update fails, so an unknown outcome can be
	// retried with it.
	RequestID string
	// Applied is true when the request is in the ledger: added by this
	// call, or by an earlier one with the same request id (Replayed). A
	// retry thus answers what the first attempt answered.
	Applied bool
	// Replayed is true when the request id was already recorded with this
	// amount: an earlier attempt applied the request, and this call wrote
	// nothing.
	Replayed bool
}

// LedgerValue is a ledger as read.
type LedgerValue struct {
	Namespace string
	Ledger    string
	// Value is Credits − Debits.
	Value int64
	// Credits and Debits are the sums of all credits and all debits.
	Credits int64
	Debits  int64
	// Actors is how many actor rows were merged: those of actors that
	// may still write. The rows of retired actors a fold has passed are
	// counted in one base and not read (FoldLedger).
	Actors int
	// Folds is how many folds the ledger has taken; 0 for a ledger never
	// folded.
	Folds uint64
}

// LedgerFold is what folds have left of a ledger's retired actors
// (FoldLedger).
type LedgerFold struct {
	Namespace string
	Ledger    string
	// Folds is how many folds have moved the cut.
	Folds uint64
	// Cut is where reads start: every actor whose id sorts below it has
	// retired, and its credits and debits are counted in Credits and
	// Debits.
	Cut string
	// Before is the birth time the cut stands for: the actors born
	// before it (to the second) are folded. Zero for a ledger never
	// folded. How far it trails now is how far folding lags: at least
	// the fold age (docs/ledger-folding.md) once folds keep up.
	Before  time.Time
	Credits int64
	Debits  int64
}

// Credit adds a positive amount to a ledger (namespace "" means
// DefaultLedgerNamespace). See UpdateLedger for the result and errors.
func (c *Client) Credit(ctx context.Context, namespace, name string, amount int64, requestID string) (*LedgerResult, error) {
	if amount <= 0 {
		return &LedgerResult{RequestID: requestID}, fmt.Errorf("%w: a credit's amount must be positive, got %d", ErrInvalid, amount)
	}
	return c.UpdateLedger(ctx, LedgerUpdate{Namespace: namespace, Ledger: name, Amount: amount, RequestID: requestID})
}

// Debit subtracts a positive amount from a ledger. See UpdateLedger.
func (c *Client) Debit(ctx context.Context, namespace, name string, amount int64, requestID string) (*LedgerResult, error) {
	if amount <= 0 {
		return &LedgerResult{RequestID: requestID}, fmt.Errorf("%w: a debit's amount must be positive, got %d", ErrInvalid, amount)
	}
	return c.UpdateLedger(ctx, LedgerUpdate{Namespace: namespace, Ledger: name, Amount: -amount, RequestID: requestID})
}

// UpdateLedger applies a signed amount to a ledger once per request id. It
// always returns a result carrying the request id. Errors:
//
//   - ErrInvalid, ErrOverflow (a side's total would pass int64),
//     ErrNamespaceNotFound, ErrRequestConflict (the id is recorded with
//     another amount): nothing was written; do not retry as is.
//   - ErrUnknownOutcome: the update may or may not have been applied.
//     Retry with the same request id: within the window it is recognised.
//   - ErrNotApplied, ErrUnavailable: not applied; retrying is safe. An
//     error that is also ErrUnknownOutcome is unknown (check that first).
func (c *Client) UpdateLedger(ctx context.Context, u LedgerUpdate) (*LedgerResult, error) {
	r := c.UpdateLedgers(ctx, []LedgerUpdate{u})[0]
	return &r.LedgerResult, r.Err
}

// CheckLedgerUpdate makes the checks UpdateLedger makes before it applies
// anything (the amount, the request id, the ledger's name and namespace),
// so that a batch can be refused as a whole. An empty request id passes:
// UpdateLedger would generate one.
func (c *Client) CheckLedgerUpdate(ctx context.Context, u LedgerUpdate) error {
	if u.RequestID == "" {
		u.RequestID = "unset" // UpdateLedger would generate a valid one
	}
	_, _, err := c.checkLedgerUpdate(ctx, u)
	return err
}

func (c *Client) checkLedgerUpdate(ctx context.Context, u LedgerUpdate) (*Namespace, ledger.Target, error) {
	switch u.Amount {
	case 0:
		return nil, ledger.Target{}, fmt.Errorf("%w: a ledger update's amount must not be zero", ErrInvalid)
	case math.MinInt64:
		return nil, ledger.Target{}, fmt.Errorf("%w: amount %d has no positive counterpart in int64; the lowest amount is %d", ErrOverflow, u.Amount, math.MinInt64+1)
	}
	if err := ledger.ValidateRequestID(u.RequestID); err != nil {
		return nil, ledger.Target{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return c.ledgerTarget(ctx, u.Namespace, u.Ledger)
}

// LedgerBatchResult is the outcome of one update of UpdateLedgers: the
// result, and the error UpdateLedger would have returned for it.
type LedgerBatchResult struct {
	LedgerResult
	Err error
}

// UpdateLedgers applies many ledger updates, each once per its own request
// id, and returns their outcomes in order. Each outcome means what
// UpdateLedger's would (see there for the errors). Updates of one ledger
// are queued together, so they share read-merge-writes (and, in exact
// mode, their claims run at once); updates of different ledgers run
// concurrently. An update without a request id gets a fresh one, reported
// in its result. A request id given twice for one ledger is recognised as
// a retry the second time.
func (c *Client) UpdateLedgers(ctx context.Context, updates []LedgerUpdate) []LedgerBatchResult {
	out := make([]LedgerBatchResult, len(updates))
	type group struct {
		t       ledger.Target
		index   []int
		changes []ledger.Change
	}
	groups := map[ledger.Target]*group{}
	var order []*group
	for i, u := range updates {
		if u.RequestID == "" {
			u.RequestID = newRequestID()
		}
		out[i].LedgerResult = LedgerResult{Namespace: u.Namespace, Ledger: u.Ledger, RequestID: u.RequestID}
		ns, t, err := c.checkLedgerUpdate(ctx, u)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Namespace = ns.Name
		g := groups[t]
		if g == nil {
			g = &group{t: t}
			groups[t] = g
			order = append(order, g)
		}
		g.index = append(g.index, i)
		g.changes = append(g.changes, ledger.Change{Amount: u.Amount, RequestID: u.RequestID})
	}
	apply := func(g *group) {
		for j, o := range c.ledger.UpdateBatch(ctx, g.t, g.changes) {
			r := &out[g.index[j]]
			if o.Err != nil {
				r.Err = publicError(o.Err)
				continue
			}
			// The engine's Applied means "this call wrote it"; a
			// recognised retry is the same request, applied before.
			r.Applied, r.Replayed = true, !o.Applied
		}
	}
	if len(order) == 1 {
		apply(order[0]) // the common case, UpdateLedger's: no goroutine to start
		return out
	}
	var wg sync.WaitGroup
	for _, g := range order {
		wg.Go(func() { apply(g) })
	}
	wg.Wait()
	return out
}

// LedgerValue reads a ledger (namespace "" means DefaultLedgerNamespace).
// A ledger never written reads as 0.
func (c *Client) LedgerValue(ctx context.Context, namespace, name string) (*LedgerValue, error) {
	return c.ledgerValueBy(ctx, namespace, name, c.ledger.Read)
}

// HasRequestID reports whether a request id is in the history of any of
// the ledger's actors, that is whether a retry of it would be recognised.
func (c *Client) HasRequestID(ctx context.Context, namespace, name, requestID string) (bool, error) {
	if err := ledger.ValidateRequestID(requestID); err != nil {
		return false, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	_, t, err := c.ledgerTarget(ctx, namespace, name)
	if err != nil {
		return false, err
	}
	st, err := c.ledger.Read(ctx, t)
	if err != nil {
		return false, publicError(err)
	}
	return st.Has(requestID), nil
}

// FindLedger reads a ledger, applies the history limit to this process's
// actor and writes that actor's row back if it changed (the design's find!).
// It returns the merged value.
func (c *Client) FindLedger(ctx context.Context, namespace, name string) (*LedgerValue, error) {
	return c.ledgerValueBy(ctx, namespace, name, c.ledger.Find)
}

// FoldLedger passes now the ledger's actors that can no longer write into
// its base: the actors born more than the fold age ago (about 51 hours at
// the defaults; docs/ledger-folding.md), so reads merge only those that
// may still write. Reads start folds on their own; this is for operators
// and benchmarks. A fold changes no value, and any number of them may run
// at once anywhere. A namespace whose actors do not retire by age
// (LedgerOptions.ActorMaxAge) does not fold: ErrInvalid.
func (c *Client) FoldLedger(ctx context.Context, namespace, name string) (*LedgerFold, error) {
	ns, t, err := c.ledgerTarget(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if t.Options.ActorMaxAge <= 0 {
		return nil, fmt.Errorf("%w: namespace %q was made without an actor age, so its ledgers do not fold", ErrInvalid, ns.Name)
	}
	b, err := c.ledger.Fold(ctx, t)
	if err != nil {
		return nil, publicError(err)
	}
	f := &LedgerFold{Namespace: ns.Name, Ledger: name, Folds: b.Version, Cut: b.Cut, Credits: b.P, Debits: b.N}
	f.Before, _ = ledger.CutTime(b.Cut)
	return f, nil
}

// ledgerValueBy resolves the ledger, gets its state with get (a plain read,
// or a find that also writes) and returns its value.
func (c *Client) ledgerValueBy(ctx context.Context, namespace, name string, get func(context.Context, ledger.Target) (*ledger.State, error)) (*LedgerValue, error) {
	ns, t, err := c.ledgerTarget(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	st, err := get(ctx, t)
	if err != nil {
		return nil, publicError(err)
	}
	return ledgerValue(ns.Name, name, st)
}

func ledgerValue(ns, name string, st *ledger.State) (*LedgerValue, error) {
	p, n, err := st.Totals()
	if err != nil {
		return nil, publicError(err)
	}
	return &LedgerValue{Namespace: ns, Ledger: name, Value: p - n, Credits: p, Debits: n, Actors: st.Len(), Folds: st.Base().Version}, nil
}

// ledgerTarget resolves a ledger's namespace, creating the default ledger
// namespace on first use.
func (c *Client) ledgerTarget(ctx context.Context, namespace, name string) (*Namespace, ledger.Target, error) {
	ns, ts, err := c.ledgerTargets(ctx, namespace, name)
	if err != nil {
		return nil, ledger.Target{}, err
	}
	return ns, ts[0], nil
}

// ledgerTargets resolves ledgers of one namespace from one view of it, so
// that all of them belong to the same incarnation of the namespace.
func (c *Client) ledgerTargets(ctx context.Context, namespace string, names ...string) (*Namespace, []ledger.Target, error) {
	for _, name := range names {
		if err := ValidateName("ledger", name); err != nil {
			return nil, nil, err
		}
	}
	if namespace == "" {
		namespace = DefaultLedgerNamespace
	}
	ns, view, err := c.live(ctx, namespace)
	if errors.Is(err, ErrNamespaceNotFound) && namespace == DefaultLedgerNamespace {
		_, err = c.CreateNamespace(ctx, NamespaceConfig{Name: DefaultLedgerNamespace, Model: ModelLedger})
		if err == nil || errors.Is(err, ErrNamespaceExists) {
			ns, view, err = c.live(ctx, namespace)
		}
	}
	if err != nil {
		return nil, nil, publicError(err)
	}
	if ns.Model != ModelLedger || ns.Ledger == nil {
		return nil, nil, fmt.Errorf("%w: namespace %q uses model %q; ledgers need a namespace of model %q", ErrInvalid, ns.Name, ns.Model, ModelLedger)
	}
	ts := make([]ledger.Target, len(names))
	for i, name := range names {
		t := ledger.Target{
			Namespace:        ns.Name,
			Ledger:           view.stored(name),
			Options:          ns.Ledger.Effective(),
			ReadConsistency:  ns.ReadConsistency,
			WriteConsistency: ns.WriteConsistency,
		}
		if t.Options.Floored && localDataCenter(c.cfg.Driver) == "" {
			// A floor's argument needs quorum reads and writes and a
			// cluster-wide SERIAL, whatever the server's default levels
			// are. With a local data center its rights are held per data
			// center, and the server's levels (LOCAL_QUORUM at DEFAULT)
			// serve: the credits a grant counts on are read at
			// EACH_QUORUM (docs/ledger.md, "Rights per data center").
			t.ReadConsistency = cmp.Or(t.ReadConsistency, driver.Quorum)
			t.WriteConsistency = cmp.Or(t.WriteConsistency, driver.Quorum)
		}
		ts[i] = t
	}
	return ns, ts, nil
}

func newRequestID() string { return randomid.Hex(16) }
