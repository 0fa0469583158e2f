package sharded

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/cockroachdb/datadriven"
)

// TestFoldPlans runs the GC fold scenarios of testdata/fold_plans: each
// gives what is stored for one counter and a cutoff, and expects the plan
// PlanFold makes. Input lines:
//
//	tally <kind> <values> ts=<µs>
//	shard <id> <kind> <values> expires=<µs>
//
// where values are comma-separated deltas (sum), observations (max, min)
// or items (distinct).
func TestFoldPlans(t *testing.T) {
	t.Parallel()
	datadriven.RunTest(t, "testdata/fold_plans", func(t *testing.T, td *datadriven.TestData) string {
		if td.Cmd != "fold" {
			t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
		}
		var cutoff int64
		td.ScanArgs(t, "cutoff", &cutoff)
		set := &driver.ShardSet{}
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 4 && f[0] == "tally":
				set.Tally = &driver.Tally{State: foldState(t, f[1], f[2]), Timestamp: foldArg(t, f[3], "ts=")}
			case len(f) == 5 && f[0] == "shard":
				set.Shards = append(set.Shards, driver.Shard{ID: f[1], State: foldState(t, f[2], f[3]), ExpiresAt: foldArg(t, f[4], "expires=")})
			default:
				t.Fatalf("%s: bad line %q", td.Pos, line)
			}
		}
		plan, err := PlanFold(set, cutoff)
		switch {
		case err != nil:
			return fmt.Sprintf("error: %v\n", err)
		case plan == nil:
			return "nothing to fold\n"
		}
		return fmt.Sprintf("delete: %s\ntally: %s %d\ntimestamp: %d\n",
			strings.Join(plan.Delete, " "), plan.Tally.Kind(), plan.Tally.Value(), plan.Timestamp)
	})
}

func foldState(t *testing.T, kind, values string) []byte {
	t.Helper()
	k, err := crdt.ParseKind(kind)
	if err != nil {
		t.Fatal(err)
	}
	s, err := crdt.New(k)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range strings.Split(values, ",") {
		op := crdt.Op{Item: []byte(v)}
		if k != crdt.KindDistinct {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			op = crdt.Op{Delta: n}
		}
		if err := s.Apply(op); err != nil {
			t.Fatal(err)
		}
	}
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func foldArg(t *testing.T, field, prefix string) int64 {
	t.Helper()
	v, ok := strings.CutPrefix(field, prefix)
	if !ok {
		t.Fatalf("want %s<n>, got %q", prefix, field)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
