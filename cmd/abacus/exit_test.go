package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
)

// Every class of failure has its exit status: scripts branch on it.
func TestExitStatusClassifiesFailures(t *testing.T) {
	t.Parallel()
	answered := func(code string) error {
		return fmt.Errorf("wrapped: %w", &client.Error{Status: api.Status(code), Code: code, Message: "m"})
	}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"usage", usagef("bad flag"), exitUsage},
		{"invalid argument", answered(api.CodeInvalidArgument), exitRefused},
		{"wrong model", answered(api.CodeWrongModel), exitRefused},
		{"forbidden", answered(api.CodeForbidden), exitRefused},
		{"body too large", answered(api.CodeBodyTooLarge), exitRefused},
		{"namespace not found", answered(api.CodeNamespaceNotFound), exitNotFound},
		{"queue not found", answered(api.CodeQueueNotFound), exitNotFound},
		{"exists", answered(api.CodeNamespaceExists), exitConflict},
		{"too late", answered(api.CodeTooLate), exitConflict},
		{"stale receipt", answered(api.CodeStaleReceipt), exitConflict},
		{"unavailable", answered(api.CodeUnavailable), exitUnavailable},
		{"not applied", answered(api.CodeNotApplied), exitUnavailable},
		{"unknown outcome", answered(api.CodeUnknownOutcome), exitUnknown},
		{"internal", answered(api.CodeInternal), exitError},
		{"a proxy's 502", &client.Error{Status: 502, Message: "bad gateway"}, exitError},
		{"refused by the client before sending", &client.Error{Code: api.CodeInvalidArgument, Message: "empty name"}, exitRefused},
		{"connection refused", &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Err: errors.New("refused")}}, exitUnavailable},
		{"connection reset after sending", &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read", Err: errors.New("reset")}}, exitUnknown},
		{"settled by the hint", &unknownOutcomeError{"may or may not"}, exitUnknown},
		{"anything else", errors.New("disk full"), exitError},
	} {
		if got := exitStatus(tc.err); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}
