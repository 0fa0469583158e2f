package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// CreateNamespace inserts the namespace with a lightweight transaction
// (INSERT ... IF NOT EXISTS), so of two processes racing to create the same
// name exactly one succeeds and the other gets driver.ErrExists. The commit
// uses the WriteConsistency level; Paxos uses SERIAL (LOCAL_SERIAL when
// that level is data-center-local).
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
	q := d.session.Query(d.q.insertNamespace, vals...).
		Consistency(cl).SerialConsistency(serialFor(d.cfg.WriteConsistency))
	// When the insert is not applied Cassandra returns the existing row;
	// MapScanCAS accepts whatever columns come back.
	applied, err := q.MapScanCASContext(ctx, map[string]any{})
	if err != nil {
		return fmt.Errorf("cassandra: %s %q: %w", op, ns.Name, mapError(opWrite, err))
	}
	if !applied {
		return fmt.Errorf("cassandra: namespace %q: %w", ns.Name, driver.ErrExists)
	}
	return nil
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
