package cassandra

import (
	"regexp"
	"testing"
)

func TestParseReleaseVersion(t *testing.T) {
	for in, want := range map[string][3]int{
		"2.1.0": {2, 1, 0}, "3.11.19": {3, 11, 19}, "4.1.10": {4, 1, 10}, "5.0.9": {5, 0, 9},
		"4.1-beta1": {4, 1, 0}, "3.0.8": {3, 0, 8}, "5.0.9.1": {5, 0, 9},
	} {
		v, err := ParseReleaseVersion(in)
		if err != nil || [3]int{v.Major, v.Minor, v.Patch} != want || v.String() != in {
			t.Errorf("ParseReleaseVersion(%q) = %+v, %v; want %v", in, v, err, want)
		}
	}
	for _, in := range []string{"", "5", "a.b", "5.x.1", "-1.0", "1.2.3.4.5"} {
		if v, err := ParseReleaseVersion(in); err == nil {
			t.Errorf("ParseReleaseVersion(%q) = %+v; want an error", in, v)
		}
	}
}

func TestCapabilitiesByVersion(t *testing.T) {
	for in, tableIDs := range map[string]bool{"2.1.0": false, "2.2.19": false, "3.0.0": true, "3.11.19": true, "4.1.10": true, "5.0.9": true} {
		v, err := ParseReleaseVersion(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := capabilitiesOf(v).TableIDs; got != tableIDs {
			t.Errorf("%s: TableIDs = %v, want %v", in, got, tableIDs)
		}
	}
}

// Every process must derive the same id for a table, and different tables
// or keyspaces different ids.
func TestTableIDDeterministic(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a := tableID("abacus", "schema_lock")
	if !uuid.MatchString(a) {
		t.Fatalf("tableID = %q, not a version 5 UUID", a)
	}
	if b := tableID("abacus", "schema_lock"); a != b {
		t.Errorf("tableID differs between calls: %s, %s", a, b)
	}
	for _, other := range []string{tableID("abacus2", "schema_lock"), tableID("abacus", "schema_lock2"), tableID("abacus.s", "chema_lock")} {
		if other == a {
			t.Errorf("distinct tables share id %s", a)
		}
	}
}
