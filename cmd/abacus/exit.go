package main

import (
	"errors"
	"net"
	"net/http"
	"net/url"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
)

// Exit statuses, one per class of failure, so that scripts can tell what
// to do next without parsing messages (listed in the root command's help).
const (
	exitOK          = 0
	exitError       = 1 // failed otherwise: a server bug, an answer that is not Abacus's
	exitUsage       = 2 // the command line is wrong; nothing was sent
	exitRefused     = 3 // the server refused the request as malformed or not fitting; nothing changed
	exitNotFound    = 4 // the namespace, queue or route does not exist
	exitConflict    = 5 // it exists already, the request id, dedup id or version was used otherwise, too late, a stale receipt
	exitUnavailable = 6 // the server or its store could not do it; nothing changed, so retrying is safe
	exitUnknown     = 7 // it may or may not have happened; retry with the same --request-id
	exitAuth        = 8 // no API key, a wrong or revoked one, or one without the scope; nothing changed
)

// exitStatusHelp is the table of exit statuses in the root command's help.
const exitStatusHelp = `Exit status: 0 done; 1 failed otherwise (a server bug, an answer that is
not Abacus's); 2 the command line is wrong, nothing was sent; 3 the server
refused the request (malformed, wrong type or model, too large, a quota,
a foreign Host), nothing changed; 4 not found; 5 a conflict (exists already, request id or
version used otherwise, too late, stale receipt); 6 unavailable, nothing
changed, retrying is safe (a key's rate limit included); 7 unknown
outcome: it may or may not have happened, repeat it with the same
--request-id; 8 the API key is missing, wrong or revoked, or lacks the
scope (--api-key-file, $ABACUS_API_KEY), nothing changed.`

// exitStatus is the exit status that classifies err.
func exitStatus(err error) int {
	var ue *usageError
	var uo *unknownOutcomeError
	var ce *client.Error
	var oe *net.OpError
	var urlErr *url.Error
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &uo):
		return exitUnknown
	case errors.As(err, &ce) && ce.Code != "":
		switch ce.Code {
		case api.CodeUnknownOutcome:
			return exitUnknown
		case api.CodeUnavailable, api.CodeNotApplied, api.CodeRateLimited, api.CodeRightsHeld:
			return exitUnavailable
		case api.CodeUnauthenticated, api.CodeInsufficientScope:
			return exitAuth
		case api.CodeInternal:
			return exitError
		}
		switch api.Status(ce.Code) {
		case http.StatusNotFound:
			return exitNotFound
		case http.StatusConflict:
			return exitConflict
		}
		return exitRefused
	case errors.As(err, &oe) && oe.Op == "dial":
		return exitUnavailable // nothing was sent
	case client.RefusedByTLS(err):
		return exitError // a certificate problem: nothing was served, and a retry will not help
	case errors.As(err, &urlErr):
		return exitUnknown // the request may have reached the server
	}
	return exitError
}

// unknownOutcomeError is an update whose outcome is unknown, with the
// advice on settling it in its message.
type unknownOutcomeError struct{ msg string }

func (e *unknownOutcomeError) Error() string { return e.msg }
