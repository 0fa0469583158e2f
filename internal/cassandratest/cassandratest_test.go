package cassandratest

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Cassandra's rule for unquoted keyspace names, kept lower case.
var validKeyspace = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)

func TestKeyspaceName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"TestFold",
		"TestConformance/Fold/DeleteWinsTimestampTie",
		strings.Repeat("TestVeryLongName", 10),
		"Test_ünïcödé/🙂 sub test#01",
		"",
		"___",
		"TestA" + strings.Repeat("_", 60) + "B",
	} {
		got := KeyspaceName(name)
		if !validKeyspace.MatchString(got) {
			t.Errorf("KeyspaceName(%q) = %q, not a valid keyspace name", name, got)
		}
		if strings.Contains(got, "__") {
			t.Errorf("KeyspaceName(%q) = %q has a double underscore", name, got)
		}
		if !strings.HasPrefix(got, keyspacePrefix) {
			t.Errorf("KeyspaceName(%q) = %q lacks the %q prefix", name, got, keyspacePrefix)
		}
	}
	if got := KeyspaceName("TestFold/Sub"); !regexp.MustCompile(`^t_testfold_sub_[0-9a-f]{8}$`).MatchString(got) {
		t.Errorf("KeyspaceName(TestFold/Sub) = %q", got)
	}
	seen := map[string]bool{}
	for range 1000 {
		n := KeyspaceName("TestSame")
		if seen[n] {
			t.Fatalf("KeyspaceName repeated %q", n)
		}
		seen[n] = true
	}
}

func TestParseHosts(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"":                      nil,
		" , ":                   nil,
		"127.0.0.1":             {"127.0.0.1"},
		"127.0.0.1, 127.0.0.2,": {"127.0.0.1", "127.0.0.2"},
		"db:9142,127.0.0.3":     {"db:9142", "127.0.0.3"},
	} {
		if got := parseHosts(in); !reflect.DeepEqual(got, want) {
			t.Errorf("parseHosts(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHostsSkipsWhenUnset(t *testing.T) {
	t.Setenv(EnvHosts, "")
	skipped := true
	t.Run("inner", func(t *testing.T) {
		Hosts(t)
		skipped = false
	})
	if !skipped {
		t.Fatal("Hosts did not skip with the variable unset")
	}
}

func TestFindScript(t *testing.T) {
	t.Parallel()
	p, err := findScript()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(p, scriptPath) {
		t.Fatalf("findScript() = %q", p)
	}
}

func TestDescribeDifference(t *testing.T) {
	same := map[string]map[string]string{
		"127.0.0.1": {"shards": "aaaaaaaa-1", "namespaces": "bbbbbbbb-1"},
		"127.0.0.2": {"shards": "aaaaaaaa-1", "namespaces": "bbbbbbbb-1"},
	}
	if d := describeDifference(same); d != "" {
		t.Errorf("agreeing nodes described as different: %s", d)
	}
	// A split: one table name with two ids.
	split := map[string]map[string]string{
		"127.0.0.1": {"shards": "aaaaaaaa-1"},
		"127.0.0.2": {"shards": "cccccccc-2"},
	}
	if d := describeDifference(split); d == "" {
		t.Error("a table with two ids was not reported")
	}
	// A node still missing a table.
	lagging := map[string]map[string]string{
		"127.0.0.1": {"shards": "aaaaaaaa-1", "namespaces": "bbbbbbbb-1"},
		"127.0.0.2": {"shards": "aaaaaaaa-1"},
	}
	if d := describeDifference(lagging); d == "" {
		t.Error("a missing table was not reported")
	}
}

func TestMinority(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		byNode map[int]string
		behind []int
	}{
		{map[int]string{1: "a", 2: "a", 3: "a"}, nil},
		{map[int]string{1: "a", 2: "a", 3: "b"}, []int{3}},
		{map[int]string{1: "b", 2: "a", 3: "a"}, []int{1}},
		{map[int]string{1: "a", 2: "a"}, []int{3}},    // node 3 did not answer
		{map[int]string{}, []int{1, 2, 3}},            // nobody answered
		{map[int]string{1: "a", 3: "b"}, []int{2, 3}}, // a tie goes to node 1
		{map[int]string{1: "a", 2: "b", 3: "b"}, []int{1}},
	} {
		if behind, summary := minority(tc.byNode); !slices.Equal(behind, tc.behind) {
			t.Errorf("minority(%v) = %v (%s); want %v", tc.byNode, behind, summary, tc.behind)
		}
	}
}
