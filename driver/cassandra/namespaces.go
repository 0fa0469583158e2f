package cassandra

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// casAttempts bounds CreateNamespace's attempts when the outcome of its
// lightweight transaction is unknown.
const casAttempts = 5

// CreateNamespace inserts the namespace with a lightweight transaction
// (INSERT ... IF NOT EXISTS), so of two processes racing to create the same
// name exactly one succeeds and the other gets driver.ErrExists. The commit
// uses the WriteConsistency level; Paxos uses SERIAL (LOCAL_SERIAL when
// that level is data-center-local).
//
// Paxos rounds that contend for one name often time out on Cassandra (the
// server gives up after cas_contention_timeout), leaving the outcome
// unknown. Such an attempt is resolved by trying again: the retry either
// applies, or returns the row that exists, and if that row is exactly the
// namespace being created, the earlier attempt was applied after all.
// This is the only write the driver repeats, and it does so because the
// repetition is itself conditional. After casAttempts unknown outcomes the
// error wraps driver.ErrUnknownOutcome.
func (d *Driver) CreateNamespace(ctx context.Context, p *driver.CreateNamespaceParams) error {
	const op = "create namespace"
	if err := d.begin(ctx, op); err != nil {
		return err
	}
	ns := p.Namespace
	vals, err := namespaceValues(ns)
	if err != nil {
		return fmt.Errorf("cassandra: %s %q: %w", op, ns.Name, err)
	}
	cl, err := level(driver.Default, d.cfg.WriteConsistency)
	if err != nil {
		return fmt.Errorf("cassandra: %s %q: %w", op, ns.Name, err)
	}
	var lastErr error
	for attempt := range casAttempts {
		if attempt > 0 {
			if err := sleepCtx(ctx, casBackoff(attempt)); err != nil {
				break // lastErr holds the unknown outcome
			}
		}
		// When the insert is not applied Cassandra returns the existing
		// row; MapScanCAS accepts whatever columns come back.
		existing := map[string]any{}
		applied, err := d.session.Query(d.q.insertNamespace, vals...).
			Consistency(cl).SerialConsistency(serialFor(d.cfg.WriteConsistency)).
			MapScanCASContext(ctx, existing)
		if err == nil {
			if applied || (attempt > 0 && sameNamespace(existing, ns)) {
				return nil
			}
			return fmt.Errorf("cassandra: namespace %q: %w", ns.Name, driver.ErrExists)
		}
		lastErr = mapError(opWrite, err)
		if !errors.Is(lastErr, driver.ErrUnknownOutcome) || ctx.Err() != nil {
			break
		}
		d.log.Debug("cassandra: namespace creation outcome unknown; retrying", "namespace", ns.Name, "attempt", attempt+1, "err", err)
	}
	return fmt.Errorf("cassandra: %s %q: %w", op, ns.Name, lastErr)
}

// casBackoff spreads contending retries apart: 50ms, 100ms, 200ms, ...
// plus up to as much again at random.
func casBackoff(attempt int) time.Duration {
	base := 25 * time.Millisecond << attempt
	return base + rand.N(base)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// sameNamespace reports whether the row returned by a not-applied insert
// holds exactly ns (as far as the table can store it).
func sameNamespace(existing map[string]any, ns driver.Namespace) bool {
	var r namespaceRow
	str := func(col string) *string {
		if v, ok := existing[col].(string); ok {
			return &v
		}
		return nil
	}
	r.Name, r.Model, r.Type = str("name"), str("model"), str("type")
	r.ReadCL, r.WriteCL = str("read_cl"), str("write_cl")
	if v, ok := existing["retention_ms"].(int64); ok {
		r.RetentionMS = &v
	}
	if v, ok := existing["created_at"].(time.Time); ok {
		r.CreatedAt = &v
	}
	r.Options, _ = existing["options"].(map[string]string)
	got, err := namespaceFromRow(r)
	if err != nil {
		return false
	}
	return got.Name == ns.Name && got.Model == ns.Model && got.Type == ns.Type &&
		got.ReadConsistency == ns.ReadConsistency && got.WriteConsistency == ns.WriteConsistency &&
		got.Retention == ns.Retention && maps.Equal(got.Options, ns.Options) &&
		got.CreatedAt.Equal(ns.CreatedAt.Truncate(time.Millisecond))
}

// GetNamespace reads one namespace at the ReadConsistency level.
func (d *Driver) GetNamespace(ctx context.Context, p *driver.GetNamespaceParams) (*driver.Namespace, error) {
	const op = "get namespace"
	if err := d.begin(ctx, op); err != nil {
		return nil, err
	}
	cl, err := level(driver.Default, d.cfg.ReadConsistency)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s %q: %w", op, p.Name, err)
	}
	iter := d.session.Query(d.q.getNamespace, p.Name).Consistency(cl).IterContext(ctx)
	var r namespaceRow
	found := iter.Scan(r.dest()...)
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: %s %q: %w", op, p.Name, mapError(opRead, err))
	}
	if !found {
		return nil, fmt.Errorf("cassandra: namespace %q: %w", p.Name, driver.ErrNotFound)
	}
	ns, err := namespaceFromRow(r)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s %q: %w", op, p.Name, err)
	}
	return ns, nil
}

// ListNamespaces reads every namespace at the ReadConsistency level, page
// by page, and returns them sorted by name. A row that cannot be decoded
// fails the whole listing rather than silently hiding a namespace.
func (d *Driver) ListNamespaces(ctx context.Context, _ *driver.ListNamespacesParams) ([]*driver.Namespace, error) {
	const op = "list namespaces"
	if err := d.begin(ctx, op); err != nil {
		return nil, err
	}
	cl, err := level(driver.Default, d.cfg.ReadConsistency)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s: %w", op, err)
	}
	iter := d.session.Query(d.q.listNamespaces).Consistency(cl).IterContext(ctx)
	var (
		out    []*driver.Namespace
		badRow error
	)
	for {
		var r namespaceRow // fresh per row: gocql reuses the targets' memory
		if !iter.Scan(r.dest()...) {
			break
		}
		ns, err := namespaceFromRow(r)
		if err != nil {
			badRow = err
			break
		}
		out = append(out, ns)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: %s: %w", op, mapError(opRead, err))
	}
	if badRow != nil {
		return nil, fmt.Errorf("cassandra: %s: %w", op, badRow)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// namespaceRow is one row of the namespaces table as scanned. Pointers are
// nil where the column is null, so the decoder can tell null from empty.
type namespaceRow struct {
	Name        *string
	Model       *string
	Type        *string
	ReadCL      *string
	WriteCL     *string
	RetentionMS *int64
	Options     map[string]string
	CreatedAt   *time.Time
}

func (r *namespaceRow) dest() []any {
	return []any{&r.Name, &r.Model, &r.Type, &r.ReadCL, &r.WriteCL, &r.RetentionMS, &r.Options, &r.CreatedAt}
}

// errBadRow marks rows that do not decode; they were written by something
// other than this driver, or damaged.
var errBadRow = errors.New("malformed row")

// namespaceFromRow converts a scanned row. Every column this driver writes
// must be present; options may be null because Cassandra stores an empty
// map as null.
func namespaceFromRow(r namespaceRow) (*driver.Namespace, error) {
	bad := func(format string, args ...any) (*driver.Namespace, error) {
		name := "<null>"
		if r.Name != nil {
			name = fmt.Sprintf("%q", *r.Name)
		}
		return nil, fmt.Errorf("%w: namespaces row %s: %s", errBadRow, name, fmt.Sprintf(format, args...))
	}
	switch {
	case r.Name == nil:
		return bad("name is null")
	case r.Model == nil:
		return bad("model is null")
	case r.Type == nil:
		return bad("type is null")
	case r.ReadCL == nil:
		return bad("read_cl is null")
	case r.WriteCL == nil:
		return bad("write_cl is null")
	case r.RetentionMS == nil:
		return bad("retention_ms is null")
	case r.CreatedAt == nil:
		return bad("created_at is null")
	}
	readCL, err := parseStoredConsistency(*r.ReadCL)
	if err != nil {
		return bad("read_cl: %v", err)
	}
	writeCL, err := parseStoredConsistency(*r.WriteCL)
	if err != nil {
		return bad("write_cl: %v", err)
	}
	ms := *r.RetentionMS
	if ms < 0 {
		return bad("retention_ms %d is negative", ms)
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return bad("retention_ms %d overflows a time.Duration", ms)
	}
	ns := &driver.Namespace{
		Name:             *r.Name,
		Model:            *r.Model,
		Type:             *r.Type,
		ReadConsistency:  readCL,
		WriteConsistency: writeCL,
		Retention:        time.Duration(ms) * time.Millisecond,
		CreatedAt:        *r.CreatedAt,
	}
	if len(r.Options) > 0 {
		ns.Options = make(map[string]string, len(r.Options))
		for k, v := range r.Options {
			ns.Options[k] = v
		}
	}
	return ns, nil
}

// parseStoredConsistency accepts exactly the names Consistency.String
// writes, DEFAULT included; anything else in the column is an error.
func parseStoredConsistency(s string) (driver.Consistency, error) {
	c, err := driver.ParseConsistency(s)
	if err != nil {
		return 0, err
	}
	if c.String() != s {
		return 0, fmt.Errorf("%q is not a stored consistency name (want %q)", s, c.String())
	}
	return c, nil
}

// namespaceValues are the bind values of insertNamespace. Namespaces that
// could not be read back are refused here rather than stored.
func namespaceValues(ns driver.Namespace) ([]any, error) {
	for _, c := range []driver.Consistency{ns.ReadConsistency, ns.WriteConsistency} {
		if _, ok := gocqlConsistency(c); !ok && c != driver.Default {
			return nil, fmt.Errorf("unknown consistency level %v", c)
		}
	}
	if ns.Retention < 0 {
		return nil, fmt.Errorf("retention %v is negative", ns.Retention)
	}
	if ns.Retention%time.Millisecond != 0 {
		return nil, fmt.Errorf("retention %v is not a whole number of milliseconds (the column's unit)", ns.Retention)
	}
	return []any{
		ns.Name, ns.Model, ns.Type,
		ns.ReadConsistency.String(), ns.WriteConsistency.String(),
		ns.Retention.Milliseconds(),
		ns.Options,
		ns.CreatedAt,
	}, nil
}
