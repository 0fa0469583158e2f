package cassandra

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

func TestEventSealSchema(t *testing.T) {
	t.Parallel()
	schemaHas(t,
		"CREATE TABLE IF NOT EXISTS k1.event_seals",
		"cleared boolean",
		"events blob",
		"PRIMARY KEY ((ns, counter, bucket), start)",
		"CLUSTERING ORDER BY (start DESC)",
	)
	q := newStatements("k1")
	if !slices.Contains(q.events.probes(), "SELECT ns FROM k1.event_seals LIMIT 1") {
		t.Errorf("probes %q lack event_seals", q.events.probes())
	}
	if s := q.lifecycle.purgeEventSeals; !strings.Contains(s, "k1.event_seals USING TIMESTAMP ?") {
		t.Errorf("purge of seals %q: want a delete at the purge timestamp", s)
	}
	// Cassandra refuses a timestamp on a conditional write, and the delete
	// must not fall below the seals' ballot timestamps.
	for _, s := range []string{q.events.sealEvents, q.events.deleteSeals} {
		if strings.Contains(s, "TIMESTAMP") {
			t.Errorf("%q carries a timestamp", s)
		}
	}
	if !strings.HasSuffix(q.events.sealEvents, " IF NOT EXISTS") {
		t.Errorf("seal insert %q is not conditional", q.events.sealEvents)
	}
}

// fullSealRow is a seal row with every column set.
func fullSealRow(start int64, events []byte) sealRow {
	return sealRow{Start: ptr(start), End: ptr(start + 10), Value: ptr(int64(-7)), Cleared: ptr(true), Events: &events}
}

func TestSealFromRows(t *testing.T) {
	t.Parallel()
	got, err := sealFromRows([]sealRow{fullSealRow(5, []byte{1, 2})}, 6)
	want := &driver.EventSeal{Start: 5, End: 15, Value: -7, Clear: true, Events: []byte{1, 2}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("sealFromRows = %+v, %v; want %+v", got, err, want)
	}
	// gocql scans an empty blob as a nil slice; the seal's is empty, not nil.
	got, err = sealFromRows([]sealRow{fullSealRow(-3, nil)}, 0)
	if err != nil || got.Events == nil || len(got.Events) != 0 || got.Start != -3 {
		t.Errorf("empty events: got %#v, %v; want a seal at -3 with an empty, non-nil Events", got, err)
	}
	if got, err := sealFromRows(nil, 6); !errors.Is(err, driver.ErrNotFound) || errors.Is(err, errBadRow) || got != nil {
		t.Errorf("no rows: got %+v, %v; want ErrNotFound", got, err)
	}
	nulls := map[string]func(*sealRow){
		"start":   func(r *sealRow) { r.Start = nil },
		"end":     func(r *sealRow) { r.End = nil },
		"value":   func(r *sealRow) { r.Value = nil },
		"cleared": func(r *sealRow) { r.Cleared = nil },
		"events":  func(r *sealRow) { r.Events = nil },
	}
	for col, null := range nulls {
		r := fullSealRow(5, []byte{1})
		null(&r)
		if got, err := sealFromRows([]sealRow{r}, 6); !errors.Is(err, errBadRow) || got != nil || !strings.Contains(err.Error(), col) {
			t.Errorf("null %s: got %+v, %v; want errBadRow naming it", col, got, err)
		}
	}
	for name, tc := range map[string]struct {
		rows   []sealRow
		before int64
	}{
		"at before":  {[]sealRow{fullSealRow(6, nil)}, 6},
		"past it":    {[]sealRow{fullSealRow(9, nil)}, 6},
		"two rows":   {[]sealRow{fullSealRow(5, nil), fullSealRow(4, nil)}, 6},
		"empty row":  {[]sealRow{{}}, 6},
		"only start": {[]sealRow{{Start: ptr(int64(1))}}, 6},
	} {
		if got, err := sealFromRows(tc.rows, tc.before); !errors.Is(err, errBadRow) || got != nil {
			t.Errorf("%s: got %+v, %v; want errBadRow", name, got, err)
		}
	}
}

// scannedCAS is the map MapScanCAS leaves after scanning a conditional
// write's answer into sealCASSeeds: a column the answer has becomes the
// scanned pointer (nil for a null), one it lacks keeps its seed, and
// columns that were not seeded arrive as plain values.
func scannedCAS(cols map[string]any) map[string]any {
	m := sealCASSeeds()
	m["ns"], m["counter"], m["bucket"] = "ns", "c", int64(0)
	for k, v := range cols {
		m[k] = v
	}
	return m
}

func allCASColumns() map[string]any {
	events := []byte{9}
	return map[string]any{"start": ptr(int64(5)), "end": ptr(int64(8)), "value": ptr(int64(3)), "cleared": ptr(false), "events": &events}
}

func TestSealFromCAS(t *testing.T) {
	t.Parallel()
	got, err := sealFromCAS(scannedCAS(allCASColumns()), 5)
	want := &driver.EventSeal{Start: 5, End: 8, Value: 3, Events: []byte{9}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("sealFromCAS = %+v, %v; want %+v", got, err, want)
	}
	cols := allCASColumns()
	cols["events"] = new([]byte) // an empty blob, as gocql scans it
	if got, err := sealFromCAS(scannedCAS(cols), 5); err != nil || got.Events == nil || len(got.Events) != 0 {
		t.Errorf("empty events: got %#v, %v; want an empty, non-nil Events", got, err)
	}

	bad := map[string]map[string]any{
		"no row at all": nil, // only the seeds: an answer without columns
		"another start": {"start": ptr(int64(4))},
		"null end":      {"end": (*int64)(nil)},
		"null events":   {"events": (*[]byte)(nil)},
		"wrong type":    {"value": int64(3)},
		"wrong pointer": {"cleared": ptr(int64(1))},
	}
	for _, col := range []string{"start", "end", "value", "cleared", "events"} {
		bad["lacks "+col] = map[string]any{col: sealCASSeeds()[col]}
	}
	for name, change := range bad {
		cols := allCASColumns()
		if change == nil {
			cols = nil
		}
		for k, v := range change {
			cols[k] = v
		}
		if got, err := sealFromCAS(scannedCAS(cols), 5); !errors.Is(err, errBadRow) || got != nil {
			t.Errorf("%s: got %+v, %v; want errBadRow", name, got, err)
		}
	}
}
