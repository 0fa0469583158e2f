package cassandra

import (
	"context"
	"fmt"
	"sort"
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
	names := make([]string, 0, len(dcs))
	for dc := range dcs {
		names = append(names, dc)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, dc := range names {
		unit := "nodes"
		if dcs[dc] == 1 {
			unit = "node"
		}
		parts[i] = fmt.Sprintf("%s (%d %s)", dc, dcs[dc], unit)
	}
	return strings.Join(parts, ", ")
}

// checkTopology reads the cluster's data centers and checks the config
// against them before any schema is made: the local data center must
// exist, and a keyspace about to be created under
// NetworkTopologyStrategy must not name a data center the cluster lacks
// (Cassandra before 4.0 creates it anyway, and then no write of that data
// center's replicas can ever succeed). A replication factor above a data
// center's node count is only warned about: nodes may be on their way.
func (d *Driver) checkTopology(ctx context.Context) error {
	dcs, err := readDataCenters(ctx, d.session)
	if err != nil {
		return fmt.Errorf("cassandra: %w", err)
	}
	d.dataCenters = dcs
	if err := d.cfg.checkDataCenters(dcs); err != nil {
		return err
	}
	r := d.cfg.Replication
	if d.cfg.Schema != SchemaCreate || r.Strategy != NetworkTopologyStrategy {
		return nil
	}
	if _, err := d.session.KeyspaceMetadata(d.cfg.Keyspace); err == nil {
		return nil // it exists and keeps its replication
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
		sort.Strings(unknown)
		return fmt.Errorf("cassandra: replication names data center(s) %s, which no node of the cluster is in (it has %s)",
			strings.Join(unknown, ", "), describeDataCenters(dcs))
	}
	return nil
}

// checkLocalReplicas runs once the keyspace exists: with a local data
// center, its replication must keep replicas there, or every LOCAL_QUORUM
// request would fail. SimpleStrategy places replicas without regard to
// data centers, so on a cluster of several it is only warned about.
func (d *Driver) checkLocalReplicas(ctx context.Context) error {
	local := d.cfg.LocalDataCenter
	if local == "" {
		return nil
	}
	ks, err := d.session.KeyspaceMetadata(d.cfg.Keyspace)
	if err != nil {
		return fmt.Errorf("cassandra: reading keyspace %s's replication: %w", d.cfg.Keyspace, err)
	}
	class := ks.StrategyClass
	switch {
	case strings.HasSuffix(class, NetworkTopologyStrategy):
		n, _ := strconv.Atoi(fmt.Sprint(ks.StrategyOptions[local]))
		if n < 1 {
			return fmt.Errorf("cassandra: keyspace %s keeps no replica in the local data center %q (its replication: %s); alter its replication or choose another --local-dc",
				d.cfg.Keyspace, local, describeOptions(ks.StrategyOptions))
		}
	case len(d.dataCenters) > 1:
		d.log.Warn("cassandra: the keyspace's replication ignores data centers; LOCAL_QUORUM then counts replicas wherever they are. Use NetworkTopologyStrategy",
			"keyspace", d.cfg.Keyspace, "strategy", class, "data_centers", describeDataCenters(d.dataCenters))
	}
	return nil
}

func describeOptions(opts map[string]any) string {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %v", k, opts[k])
	}
	return strings.Join(parts, ", ")
}
