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
	dial := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Err: errors.New("refused")}}
	reset := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read", Err: errors.New("reset")}}
	for want, errs := range map[int][]error{
		exitUsage:       {usagef("bad flag")},
		exitRefused:     {answered(api.CodeInvalidArgument), answered(api.CodeWrongModel), answered(api.CodeQuotaExceeded), answered(api.CodeForbidden), answered(api.CodeBodyTooLarge), &client.Error{Code: api.CodeInvalidArgument, Message: "not sent"}},
		exitNotFound:    {answered(api.CodeNamespaceNotFound), answered(api.CodeQueueNotFound)},
		exitConflict:    {answered(api.CodeNamespaceExists), answered(api.CodeTooLate), answered(api.CodeStaleReceipt), answered(api.CodeBelowFloor)},
		exitUnavailable: {answered(api.CodeUnavailable), answered(api.CodeNotApplied), answered(api.CodeRateLimited), answered(api.CodeRightsHeld), dial},
		exitAuth:        {answered(api.CodeUnauthenticated), answered(api.CodeInsufficientScope)},
		exitUnknown:     {answered(api.CodeUnknownOutcome), reset, &unknownOutcomeError{"may or may not"}},
		exitError:       {answered(api.CodeInternal), &client.Error{Status: 502, Message: "a proxy's bad gateway"}, errors.New("disk full")},
	} {
		for _, err := range errs {
			if got := exitStatus(err); got != want {
				t.Errorf("%v: exit %d, want %d", err, got, want)
			}
		}
	}
}
