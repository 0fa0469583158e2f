package cassandra

import "testing"

// Messages that list a map read the same whatever order the map yields.
func TestDescribeSorted(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{describeDataCenters(map[string]int{"dc2": 2, "dc1": 1, "dc10": 3}), "dc1 (1 node), dc10 (3 nodes), dc2 (2 nodes)"},
		{describeDataCenters(nil), ""},
		{describeOptions(map[string]string{"class": "NetworkTopologyStrategy", "dc2": "3", "dc1": "1"}), "dc1: 1, dc2: 3"},
		{describeOptions(map[string]string{"class": "SimpleStrategy"}), ""},
		{describeVersions(map[string][]string{
			"b0000000-1111-2222-3333-444444444444": {"127.0.0.3"},
			"a0000000-1111-2222-3333-444444444444": {"127.0.0.1", "127.0.0.2"},
		}), "a0000000 on 127.0.0.1, 127.0.0.2; b0000000 on 127.0.0.3"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
