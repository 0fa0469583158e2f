package cassandra

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// ReleaseVersion is a Cassandra release as system.local reports it, e.g.
// 5.0.9 or 4.1.10. ScyllaDB reports the Cassandra release it speaks for
// (3.0.8), which is what the capabilities below are about.
type ReleaseVersion struct {
	Major, Minor, Patch int
	// Raw is the text as reported, qualifier and all ("4.1-beta1").
	Raw string
}

func (v ReleaseVersion) String() string { return v.Raw }

// AtLeast reports whether v is major.minor or later.
func (v ReleaseVersion) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// ParseReleaseVersion reads "major.minor[.patch][-qualifier]".
func ParseReleaseVersion(s string) (ReleaseVersion, error) {
	v := ReleaseVersion{Raw: s}
	core, _, _ := strings.Cut(s, "-")
	parts := strings.Split(core, ".")
	if len(parts) < 2 || len(parts) > 4 {
		return v, fmt.Errorf("release version %q is not major.minor[.patch]", s)
	}
	nums := []*int{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts[:min(len(parts), 3)] {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, fmt.Errorf("release version %q is not major.minor[.patch]", s)
		}
		*nums[i] = n
	}
	return v, nil
}

// Capabilities are what the cluster's release lets the driver do beyond
// the CQL of Cassandra 2.1, read once when the driver opens. Everything
// the driver must do works on 2.1; a capability only makes something
// safer or cheaper where the cluster allows it.
type Capabilities struct {
	// Version is the lowest release among the nodes that answered: a
	// cluster in the middle of an upgrade gets only what all its nodes
	// understand.
	Version ReleaseVersion
	// TableIDs: CREATE TABLE accepts WITH ID (3.0+), so tables that
	// several processes may create at once can be given the same id by
	// all of them and their schema converges instead of splitting.
	TableIDs bool
}

func capabilitiesOf(v ReleaseVersion) Capabilities {
	return Capabilities{Version: v, TableIDs: v.AtLeast(3, 0)}
}

// readCapabilities asks every node it can reach for its release and
// keeps the lowest.
func readCapabilities(ctx context.Context, s *gocql.Session) (Capabilities, error) {
	var local string
	// A 2.1 node has been seen (once, in CI, with schema changes running
	// beside) to answer this with an empty release_version; asking again
	// gets the real one.
	for attempt := 1; ; attempt++ {
		if err := s.Query("SELECT release_version FROM system.local").
			Consistency(gocql.One).ScanContext(ctx, &local); err != nil {
			return Capabilities{}, fmt.Errorf("reading the release version: %w", err)
		}
		if local != "" || attempt == 10 {
			break
		}
		select {
		case <-ctx.Done():
			return Capabilities{}, fmt.Errorf("reading the release version: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	lowest, err := ParseReleaseVersion(local)
	if err != nil {
		return Capabilities{}, err
	}
	iter := s.Query("SELECT release_version FROM system.peers").Consistency(gocql.One).IterContext(ctx)
	var peer string
	for iter.Scan(&peer) {
		v, err := ParseReleaseVersion(peer)
		if err != nil {
			continue // a peer still joining may report nothing yet
		}
		if !v.AtLeast(lowest.Major, lowest.Minor) || v.Major == lowest.Major && v.Minor == lowest.Minor && v.Patch < lowest.Patch {
			lowest = v
		}
	}
	if err := iter.Close(); err != nil {
		return Capabilities{}, fmt.Errorf("reading the peers' release versions: %w", err)
	}
	return capabilitiesOf(lowest), nil
}
