package cassandratest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// WantOneSchema fails the test unless every node of the cluster holds each
// table of keyspace with the same table id: the mark of a split schema is
// one table name with two ids, which never heals by itself. A node that has
// not yet received the latest table is given up to a minute to catch up.
// It looks at this keyspace only, so schema changes other tests make at the
// same time do not disturb it.
func WantOneSchema(t testing.TB, keyspace string) {
	t.Helper()
	s := Session(t)
	stmt := "SELECT table_name, id FROM system_schema.tables WHERE keyspace_name = ?"
	if major, err := releaseMajor(s); err != nil {
		t.Fatalf("cassandratest: reading the release: %v", err)
	} else if major < 3 {
		stmt = "SELECT columnfamily_name, cf_id FROM system.schema_columnfamilies WHERE keyspace_name = ?"
	}
	deadline := time.Now().Add(time.Minute)
	for {
		tables := map[string]map[string]string{} // node -> table -> id
		var readErr error
		for _, h := range s.GetHosts() {
			if !h.IsUp() {
				continue
			}
			ids := map[string]string{}
			iter := s.Query(stmt, keyspace).SetHostID(h.HostID()).Consistency(gocql.One).Iter()
			var name string
			var id gocql.UUID
			for iter.Scan(&name, &id) {
				ids[name] = id.String()
			}
			if err := iter.Close(); err != nil {
				readErr = fmt.Errorf("tables of %s on %s: %w", keyspace, h.ConnectAddress(), err)
				break
			}
			tables[h.ConnectAddress().String()] = ids
		}
		differ := describeDifference(tables)
		if readErr == nil && differ == "" {
			return
		}
		if time.Now().After(deadline) {
			if readErr != nil {
				t.Fatalf("cassandratest: %v", readErr)
			}
			t.Fatalf("cassandratest: the nodes hold different tables for keyspace %s after a minute: %s", keyspace, differ)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// describeDifference says how the nodes' tables differ, or "" if they agree.
func describeDifference(tables map[string]map[string]string) string {
	var first map[string]string
	var firstNode string
	for node, ids := range tables {
		if first == nil {
			first, firstNode = ids, node
			continue
		}
		if !maps.Equal(first, ids) {
			return fmt.Sprintf("%s has %s; %s has %s", firstNode, describeTables(first), node, describeTables(ids))
		}
	}
	return ""
}

func describeTables(ids map[string]string) string {
	parts := make([]string, 0, len(ids))
	for name, id := range ids {
		parts = append(parts, name+"="+id[:8])
	}
	slices.Sort(parts)
	return strconv.Itoa(len(ids)) + " tables (" + strings.Join(parts, ", ") + ")"
}

func releaseMajor(s *gocql.Session) (int, error) {
	var release string
	if err := s.Query("SELECT release_version FROM system.local").Scan(&release); err != nil {
		return 0, err
	}
	major, _, _ := strings.Cut(release, ".")
	return strconv.Atoi(major)
}
