package cassandra

import (
	"testing"

	"github.com/abacusdb/abacus/driver"
)

func TestKeysAreReadAndWrittenAtAQuorumAtLeast(t *testing.T) {
	t.Parallel()
	for configured, want := range map[driver.Consistency]driver.Consistency{
		driver.Default: driver.Quorum, driver.One: driver.Quorum, driver.LocalOne: driver.Quorum, driver.Two: driver.Quorum,
		driver.Any: driver.Quorum, driver.Quorum: driver.Quorum, driver.LocalQuorum: driver.LocalQuorum,
		driver.EachQuorum: driver.EachQuorum, driver.All: driver.All,
	} {
		if got := keyLevel(configured); got != want {
			t.Errorf("keyLevel(%v) = %v, want %v", configured, got, want)
		}
	}
}

func TestOperationName(t *testing.T) {
	t.Parallel()
	for stmt, want := range map[string]string{
		"SELECT shard, state FROM abacus.shards WHERE ns = ?":                "SELECT abacus.shards",
		"INSERT INTO abacus.api_keys (id, name) VALUES (?, ?) IF NOT EXISTS": "INSERT abacus.api_keys",
		"update abacus.shards SET tally = ? WHERE ns = ?":                    "UPDATE abacus.shards",
		"DELETE FROM abacus.api_keys WHERE id = ? IF EXISTS":                 "DELETE abacus.api_keys",
		"": "query",
	} {
		if got := operationName(stmt); got != want {
			t.Errorf("operationName(%q) = %q, want %q", stmt, got, want)
		}
	}
}
