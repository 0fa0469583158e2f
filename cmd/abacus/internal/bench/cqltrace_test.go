package bench

import "testing"

// The read event's wording differs between releases; each must give its
// counts, and no other event may be taken for a read.
func TestParseReadActivity(t *testing.T) {
	for _, c := range []struct {
		activity         string
		live, tombstones int
		ok               bool
	}{
		{"Read 1 live rows and 30000 tombstone cells", 1, 30000, true},             // 3.0 to 5.0
		{"Read 200 live rows and 0 tombstone cells for query x", 200, 0, true},     // a suffix is fine
		{"Read 1 live and 3 tombstoned cells", 1, 3, true},                         // 2.1
		{"Read 0 live and 0 tombstoned cells", 0, 0, true},                         // 2.1, empty
		{"Merged data from memtables and 2 sstables", 0, 0, false},                 // another event
		{"Executing single-partition query on shards", 0, 0, false},                // another event
		{"Read 1 live rows and 99999999999999999999 tombstone cells", 0, 0, false}, // no int
		{" Read 1 live rows and 2 tombstone cells", 0, 0, false},                   // not at the start
	} {
		live, tombstones, ok := parseReadActivity(c.activity)
		if ok != c.ok || live != c.live || tombstones != c.tombstones {
			t.Errorf("%q: %d, %d, %v; want %d, %d, %v", c.activity, live, tombstones, ok, c.live, c.tombstones, c.ok)
		}
	}
}
