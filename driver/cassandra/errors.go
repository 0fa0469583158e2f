package cassandra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

// opKind says whether a failed request could have changed data, which
// decides how its error is reported.
type opKind uint8

const (
	opRead opKind = iota
	opWrite
)

func (k opKind) String() string {
	if k == opWrite {
		return "write"
	}
	return "read"
}

// mapError turns an error from gocql into one that wraps the driver
// sentinels the models act on, keeping the original in the chain so callers
// can still inspect gocql's error types.
//
// The rules, in the order they are checked:
//
//   - The session was closed before sending: driver.ErrClosed.
//   - Nothing was executed because too few replicas were alive
//     (RequestErrUnavailable), the coordinator was bootstrapping, or no
//     connection or stream was free: driver.ErrUnavailable. Cassandra checks
//     liveness before it sends a mutation anywhere, and the driver never
//     retries a write on another host (writes are not marked idempotent),
//     so in these cases nothing can have been applied.
//   - For a read, a server read timeout (whether or not enough replicas
//     answered), a client-side timeout, a broken connection or a cancelled
//     context: driver.ErrUnavailable. A read changes nothing, so trying it
//     again is always safe, and the caller is told so (503 unavailable,
//     not a 500): a replica cut off by a network partition, not yet known
//     to be down, makes reads time out rather than be refused. Any other
//     read error (a failure a replica reported, a malformed request) is
//     wrapped as is.
//   - For a write, an error that proves the request was rejected before
//     execution (syntax, invalid, unauthorized, bad credentials, config,
//     marshalling) is wrapped as is.
//   - Every other write error is driver.ErrUnknownOutcome: server write
//     timeouts and failures, LWT outcomes the server could not determine,
//     overload, client timeouts, cancelled contexts and broken connections
//     all leave the write possibly applied now or later (hints, repair).
//     Unknown errors are treated the same way: claiming "unknown" is always
//     safe, claiming "not applied" is not.
func mapError(kind opKind, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, driver.ErrClosed) || errors.Is(err, driver.ErrUnavailable) ||
		errors.Is(err, driver.ErrUnknownOutcome) {
		return err // already mapped
	}
	if errors.Is(err, gocql.ErrSessionClosed) {
		return fmt.Errorf("%w: %w", driver.ErrClosed, err)
	}
	if notExecuted(err) {
		return fmt.Errorf("%w: %w", driver.ErrUnavailable, err)
	}
	if kind == opRead {
		var rt *gocql.RequestErrReadTimeout
		if errors.As(err, &rt) && rt.Received < rt.BlockFor {
			return fmt.Errorf("%w: %w (%d of %d replicas answered at %v)",
				driver.ErrUnavailable, err, rt.Received, rt.BlockFor, rt.Consistency)
		}
		if serialReadCut(err) {
			return fmt.Errorf("%w: %w (a read at SERIAL could not finish the Paxos round it found)", driver.ErrUnavailable, err)
		}
		if isTimeout(err) || errors.Is(err, context.Canceled) || isNetError(err) {
			return fmt.Errorf("%w: %w (no answer in time)", driver.ErrUnavailable, err)
		}
		return err
	}
	if rejected(err) {
		return err
	}
	return fmt.Errorf("%w: %w", driver.ErrUnknownOutcome, err)
}

// serialReadCut reports the errors of a read at SERIAL that found another
// client's Paxos round in progress and could not get a quorum to finish
// it (Cassandra 4.1 and later answer CAS_WRITE_UNKNOWN, "proposal accepted
// by 1 but not a quorum", or a CAS write timeout). The read wrote nothing
// of its caller's, so, like a read short of replicas, it is unavailable:
// try again. Racing compare-and-sets on one record meet it under load.
func serialReadCut(err error) bool {
	var (
		unknown *gocql.RequestErrCASWriteUnknown
		wt      *gocql.RequestErrWriteTimeout
	)
	return errors.As(err, &unknown) || errors.As(err, &wt) && wt.WriteType == "CAS"
}

// notExecuted reports errors that prove the request was not executed
// because replicas or connections were missing.
func notExecuted(err error) bool {
	var (
		unavailable   *gocql.RequestErrUnavailable
		bootstrapping *gocql.RequestErrBootstrapping
	)
	switch {
	case errors.As(err, &unavailable), errors.As(err, &bootstrapping):
		return true
	case errors.Is(err, gocql.ErrNoConnections), errors.Is(err, gocql.ErrNoStreams),
		errors.Is(err, gocql.ErrNoHosts), errors.Is(err, gocql.ErrNoConnectionsStarted):
		return true
	}
	return false
}

// rejected reports errors that prove a request was refused before anything
// was written.
func rejected(err error) bool {
	var (
		syntax       *gocql.RequestErrSyntax
		invalid      *gocql.RequestErrInvalid
		unauthorized *gocql.RequestErrUnauthorized
		credentials  *gocql.RequestErrCredentials
		config       *gocql.RequestErrConfig
		exists       *gocql.RequestErrAlreadyExists
		marshal      gocql.MarshalError
	)
	switch {
	case errors.As(err, &syntax), errors.As(err, &invalid), errors.As(err, &unauthorized),
		errors.As(err, &credentials), errors.As(err, &config), errors.As(err, &exists),
		errors.As(err, &marshal):
		return true
	}
	// A protocol error means the server could not even parse the frame.
	var re gocql.RequestError
	if errors.As(err, &re) && re.Code() == gocql.ErrCodeProtocol {
		return true
	}
	return false
}

// isNetError reports a connection's failure, such as a reset.
func isNetError(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne)
}

// isTimeout reports errors after which a request should be retried by
// idempotent internal callers (schema creation).
func isTimeout(err error) bool {
	var (
		wt *gocql.RequestErrWriteTimeout
		rt *gocql.RequestErrReadTimeout
		ne net.Error
	)
	return errors.As(err, &wt) || errors.As(err, &rt) ||
		errors.Is(err, gocql.ErrTimeoutNoResponse) || errors.Is(err, gocql.ErrConnectionClosed) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// gocqlLevels are the gocql levels of the driver's levels.
var gocqlLevels = map[driver.Consistency]gocql.Consistency{
	driver.One:         gocql.One,
	driver.Two:         gocql.Two,
	driver.Three:       gocql.Three,
	driver.Quorum:      gocql.Quorum,
	driver.All:         gocql.All,
	driver.LocalQuorum: gocql.LocalQuorum,
	driver.EachQuorum:  gocql.EachQuorum,
	driver.LocalOne:    gocql.LocalOne,
	driver.Any:         gocql.Any,
}

// gocqlConsistency converts a driver level; ok is false for Default and for
// values that are not levels.
func gocqlConsistency(c driver.Consistency) (gocql.Consistency, bool) {
	g, ok := gocqlLevels[c]
	return g, ok
}

// lwtSerial is the Paxos level of every lightweight transaction: SERIAL,
// whatever the level of its commit. Each decides something that must be
// one across data centers: a request id claimed (a ledger would apply it
// twice), a cas value (an add would be lost), a queue shard's lease (two
// consumers would deliver its messages), a name created (two records with
// different settings). LOCAL_SERIAL runs Paxos among the local data
// center's replicas only, so two data centers can each decide
// differently, within their replication delay and for as long as a
// partition between them lasts (docs/datacenters.md). Under SERIAL a data
// center cut off from a majority of the replicas refuses instead. The
// commit itself may go out at a local level: the next Paxos round on the
// partition finishes it, and that is how a decision is read back
// (ReadClaim, ReadLedgerRights, serial reads of cas counters, all at
// SERIAL). The one exception is a data center's record of its share of a
// ledger's rights (ledger_rights_dc), which only that data center's
// servers ever change: its rounds run at LOCAL_SERIAL.
const lwtSerial = gocql.Serial
