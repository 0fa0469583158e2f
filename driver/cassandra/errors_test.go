package cassandra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

func TestMapError(t *testing.T) {
	t.Parallel()
	netTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	tests := []struct {
		name string
		err  error
		// want is the sentinel for a read and for a write; nil means the
		// error is returned without one.
		read, write error
	}{
		{"unavailable", &gocql.RequestErrUnavailable{Consistency: gocql.All, Required: 3, Alive: 2},
			driver.ErrUnavailable, driver.ErrUnavailable},
		{"unavailable wrapped", fmt.Errorf("context: %w", &gocql.RequestErrUnavailable{}),
			driver.ErrUnavailable, driver.ErrUnavailable},
		{"bootstrapping", &gocql.RequestErrBootstrapping{}, driver.ErrUnavailable, driver.ErrUnavailable},
		{"no connections", gocql.ErrNoConnections, driver.ErrUnavailable, driver.ErrUnavailable},
		{"no streams", gocql.ErrNoStreams, driver.ErrUnavailable, driver.ErrUnavailable},
		{"session closed", gocql.ErrSessionClosed, driver.ErrClosed, driver.ErrClosed},

		{"write timeout", &gocql.RequestErrWriteTimeout{Consistency: gocql.Quorum, Received: 1, BlockFor: 2, WriteType: "SIMPLE"},
			driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"batch write timeout", &gocql.RequestErrWriteTimeout{WriteType: "UNLOGGED_BATCH"}, driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"cas write timeout", &gocql.RequestErrWriteTimeout{WriteType: "CAS"}, driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"write failure", &gocql.RequestErrWriteFailure{NumFailures: 1}, nil, driver.ErrUnknownOutcome},
		{"cas unknown", &gocql.RequestErrCASWriteUnknown{}, driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"overloaded", &gocql.RequestErrOverloaded{}, nil, driver.ErrUnknownOutcome},
		{"client timeout", gocql.ErrTimeoutNoResponse, driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"connection closed", gocql.ErrConnectionClosed, driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"deadline", context.DeadlineExceeded, driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"canceled", context.Canceled, driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"net timeout", netTimeout, driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"connection reset", reset, driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"eof", io.EOF, driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"unrecognised", errors.New("something odd"), nil, driver.ErrUnknownOutcome},

		{"read timeout, replicas missing", &gocql.RequestErrReadTimeout{Consistency: gocql.All, Received: 2, BlockFor: 3},
			driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"read timeout, data missing", &gocql.RequestErrReadTimeout{Consistency: gocql.All, Received: 3, BlockFor: 3},
			driver.ErrUnavailable, driver.ErrUnknownOutcome},
		{"read failure", &gocql.RequestErrReadFailure{NumFailures: 1}, nil, driver.ErrUnknownOutcome},

		{"syntax", &gocql.RequestErrSyntax{}, nil, nil},
		{"invalid", &gocql.RequestErrInvalid{}, nil, nil},
		{"unauthorized", &gocql.RequestErrUnauthorized{}, nil, nil},
		{"credentials", &gocql.RequestErrCredentials{}, nil, nil},
		{"config", &gocql.RequestErrConfig{}, nil, nil},
		{"already exists", &gocql.RequestErrAlreadyExists{}, nil, nil},
		{"marshal", gocql.MarshalError("can not marshal"), nil, nil},
	}
	sentinels := []error{driver.ErrUnavailable, driver.ErrUnknownOutcome, driver.ErrClosed}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				kind opKind
				want error
			}{{opRead, tt.read}, {opWrite, tt.write}} {
				got := mapError(c.kind, tt.err)
				if !errors.Is(got, tt.err) {
					t.Errorf("%v: %v lost the original error", c.kind, got)
				}
				for _, s := range sentinels {
					if is, want := errors.Is(got, s), s == c.want; is != want {
						t.Errorf("%v: errors.Is(%v, %v) = %v, want %v", c.kind, got, s, is, want)
					}
				}
				// Mapping twice changes nothing.
				if again := mapError(c.kind, got); again != got {
					t.Errorf("%v: mapping twice gave %v, then %v", c.kind, got, again)
				}
			}
		})
	}
	if mapError(opWrite, nil) != nil || mapError(opRead, nil) != nil {
		t.Error("mapError(nil) != nil")
	}
}

func TestIsTimeout(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&gocql.RequestErrWriteTimeout{}, &gocql.RequestErrReadTimeout{}, gocql.ErrTimeoutNoResponse,
		context.DeadlineExceeded, &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded},
	} {
		if !isTimeout(err) {
			t.Errorf("isTimeout(%T) = false", err)
		}
	}
	for _, err := range []error{&gocql.RequestErrInvalid{}, &gocql.RequestErrUnavailable{}, errors.New("x")} {
		if isTimeout(err) {
			t.Errorf("isTimeout(%T) = true", err)
		}
	}
}

// A batch of several writes that finds a partition short of replicas may
// have sent other partitions' writes first: it is never reported as
// unavailable (which promises nothing was applied), only as unknown. A
// batch of one write is the write alone.
func TestBatchShortOfReplicasIsUnknown(t *testing.T) {
	t.Parallel()
	unavailable := &gocql.RequestErrUnavailable{Consistency: gocql.Quorum, Required: 2, Alive: 1}
	got := mapBatchError(3, unavailable)
	if !errors.Is(got, driver.ErrUnknownOutcome) || errors.Is(got, driver.ErrUnavailable) {
		t.Errorf("a batch of 3 short of replicas: %v, want unknown outcome and not unavailable", got)
	}
	if got := mapBatchError(1, unavailable); !errors.Is(got, driver.ErrUnavailable) {
		t.Errorf("a batch of 1 short of replicas: %v, want unavailable", got)
	}
	if got := mapBatchError(3, gocql.ErrSessionClosed); !errors.Is(got, driver.ErrClosed) {
		t.Errorf("a batch on a closed session: %v, want closed", got)
	}
}
