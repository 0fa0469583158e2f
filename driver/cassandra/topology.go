package cassandra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// DataCenters maps each data center of the cluster to its number of
// nodes, as the nodes reported them when Open ran.
func (d *Driver) DataCenters() map[string]int {
	out := make(map[string]int, len(d.dataCenters))
	for dc, n := range d.dataCenters {
		out[dc] = n
	}
	return out
}

// LocalDataCenter is Config.LocalDataCenter: the data center whose nodes
// coordinate this driver's requests, or "" when every node does.
func (d *Driver) LocalDataCenter() string { return d.cfg.LocalDataCenter }

// inDataCenter says whether a node of data center dc may join the pool of
// a driver whose local data center is local. A node whose data center is
// not known yet stays out until gossip tells.
func inDataCenter(local, dc string) bool { return dc == local }

// readDataCenters counts the nodes of each data center: the node answering
// and its peers. A peer still joining may not have its data center yet;
// it is left out rather than counted under "".
func readDataCenters(ctx context.Context, s *gocql.Session) (map[string]int, error) {
	dcs := map[string]int{}
	var dc string
	if err := s.Query("SELECT data_center FROM system.local").
		Consistency(gocql.One).ScanContext(ctx, &dc); err != nil {
		return nil, fmt.Errorf("reading the node's data center: %w", err)
	}
	dcs[dc]++
	iter := s.Query("SELECT data_center FROM system.peers").Consistency(gocql.One).IterContext(ctx)
	for iter.Scan(&dc) {
		if dc != "" {
			dcs[dc]++
		}
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("reading the peers' data centers: %w", err)
	}
	return dcs, nil
}

// probeDataCenters reads the cluster's data centers through a session of
// its own that may use any node: the driver's session filters out every
// node outside LocalDataCenter, so when that name is wrong it cannot
// connect at all, and the error should say which names would do.
func probeDataCenters(ctx context.Context, cfg Config) (map[string]int, error) {
	probe := cfg
	probe.LocalDataCenter = ""
	probe.NumConns = 1
	cluster, err := probe.cluster()
	if err != nil {
		return nil, err
	}
	s, err := createSession(ctx, cluster)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return readDataCenters(ctx, s)
}

// checkDataCenters refuses a LocalDataCenter that no node is in.
func (c Config) checkDataCenters(dcs map[string]int) error {
	if c.LocalDataCenter == "" {
		return nil
	}
	if _, ok := dcs[c.LocalDataCenter]; !ok {
		return fmt.Errorf("cassandra: local data center %q is not a data center of the cluster at %s (it has %s); give one of these names, as the nodes' snitch reports it",
			c.LocalDataCenter, strings.Join(c.Hosts, ","), describeDataCenters(dcs))
	}
	return nil
}

// describeDataCenters renders dcs as "dc1 (2 nodes), dc2 (2 nodes)".
func describeDataCenters(dcs map[string]int) string {
	return describeSorted(dcs, ", ", func(dc string, n int) string {
		if n == 1 {
			return dc + " (1 node)"
		}
		return fmt.Sprintf("%s (%d nodes)", dc, n)
	})
}

// describeSorted renders a map for a message, one part per key in key
// order, joined by sep, leaving out the keys whose part is "": the same
// map always reads the same.
func describeSorted[V any](m map[string]V, sep string, part func(k string, v V) string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if p := part(k, m[k]); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, sep)
}

// checkTopology reads the cluster's data centers and checks the config
// against them before any schema is made: the local data center must
// exist, and a keyspace about to be created under
// NetworkTopologyStrategy must not name a data center the cluster lacks
// (Cassandra before 4.0 creates it anyway, and then no write of that data
// center's replicas can ever succeed), nor leave the local one without
// replicas. A replication factor above a data center's node count is only
// warned about: nodes may be on their way. It returns the keyspace's
// replication if it read that the keyspace exists (creating the schema
// leaves an existing keyspace's replication as it is), else nil.
func (d *Driver) checkTopology(ctx context.Context) (*replication, error) {
	dcs, err := readDataCenters(ctx, d.session)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	d.dataCenters = dcs
	if err := d.cfg.checkDataCenters(dcs); err != nil {
		return nil, err
	}
	r := d.cfg.Replication
	if d.cfg.Schema != SchemaCreate || r.Strategy != NetworkTopologyStrategy {
		return nil, nil
	}
	if have, exists, err := d.keyspaceReplication(ctx); err != nil {
		return nil, err
	} else if exists {
		return &have, nil // it keeps its replication
	}
	var unknown []string
	for dc, n := range r.DataCenters {
		have, ok := dcs[dc]
		switch {
		case !ok && n > 0:
			unknown = append(unknown, dc)
		case ok && n > have:
			d.log.Warn("cassandra: replication factor above the data center's node count; writes at LOCAL_QUORUM there fail until nodes join",
				"data_center", dc, "replication_factor", n, "nodes", have)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("cassandra: replication names data center(s) %s, which no node of the cluster is in (it has %s)",
			strings.Join(unknown, ", "), describeDataCenters(dcs))
	}
	if local := d.cfg.LocalDataCenter; local != "" && r.DataCenters[local] < 1 {
		return nil, fmt.Errorf("cassandra: the replication to create keyspace %s with keeps no replica in the local data center %q; give it some (such as %s:3)",
			d.cfg.Keyspace, local, local)
	}
	return nil, nil
}

// replication is a keyspace's replication as its schema row holds it: the
// strategy's class and its options (for NetworkTopologyStrategy, replicas
// per data center).
type replication struct {
	class   string
	options map[string]string
}

// keyspaceReplication reads the keyspace's replication from the schema
// tables of the node that answers, not from gocql's metadata cache, which
// is refreshed a second after the last schema change it heard of and so
// lags behind a keyspace just created.
func (d *Driver) keyspaceReplication(ctx context.Context) (replication, bool, error) {
	var r replication
	var err error
	if d.caps.Version.AtLeast(3, 0) {
		err = d.session.Query("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?", d.cfg.Keyspace).
			Consistency(gocql.One).ScanContext(ctx, &r.options)
		r.class = r.options["class"]
	} else {
		var opts string
		err = d.session.Query("SELECT strategy_class, strategy_options FROM system.schema_keyspaces WHERE keyspace_name = ?", d.cfg.Keyspace).
			Consistency(gocql.One).ScanContext(ctx, &r.class, &opts)
		if err == nil && opts != "" {
			if jerr := json.Unmarshal([]byte(opts), &r.options); jerr != nil {
				return r, true, fmt.Errorf("cassandra: keyspace %s's strategy options %q: %w", d.cfg.Keyspace, opts, jerr)
			}
		}
	}
	if errors.Is(err, gocql.ErrNotFound) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("cassandra: reading keyspace %s's replication: %w", d.cfg.Keyspace, err)
	}
	return r, true, nil
}

// replicasIn reads a data center's replica count from NetworkTopologyStrategy
// options: "3", or "3/1" (three replicas, one of them transient, 4.0 on).
func replicasIn(opts map[string]string, dc string) int {
	v, _, _ := strings.Cut(opts[dc], "/")
	n, _ := strconv.Atoi(strings.TrimSpace(v))
	return n
}

// checkLocalReplicas runs once the keyspace exists: with a local data
// center, its replication must keep replicas there, or every LOCAL_QUORUM
// request would fail. SimpleStrategy places replicas without regard to
// data centers, and Cassandra then counts a local quorum of the whole
// replication factor among the local replicas only, which some ranges do
// not have: refused on a cluster of several data centers. known is the
// replication checkTopology read, if it did; otherwise it is read now,
// since the keyspace may have just been made, by this process or another.
func (d *Driver) checkLocalReplicas(ctx context.Context, known *replication) error {
	local := d.cfg.LocalDataCenter
	if local == "" {
		return nil
	}
	if known == nil {
		r, exists, err := d.keyspaceReplication(ctx)
		if err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("cassandra: keyspace %s is not in the schema of the node that answered", d.cfg.Keyspace)
		}
		known = &r
	}
	r := *known
	switch {
	case strings.HasSuffix(r.class, NetworkTopologyStrategy):
		if replicasIn(r.options, local) < 1 {
			return fmt.Errorf("cassandra: keyspace %s keeps no replica in the local data center %q (its replication: %s); alter its replication or choose another local data center",
				d.cfg.Keyspace, local, describeOptions(r.options))
		}
	case len(d.dataCenters) > 1:
		return fmt.Errorf("cassandra: keyspace %s uses %s, which places replicas without regard to data centers, on a cluster of %d (%s); with a local data center it needs NetworkTopologyStrategy (ALTER KEYSPACE %s WITH replication = {'class': 'NetworkTopologyStrategy', …})",
			d.cfg.Keyspace, r.class, len(d.dataCenters), describeDataCenters(d.dataCenters), d.cfg.Keyspace)
	}
	return nil
}

func describeOptions(opts map[string]string) string {
	return describeSorted(opts, ", ", func(k, v string) string {
		if k == "class" {
			return ""
		}
		return k + ": " + v
	})
}
