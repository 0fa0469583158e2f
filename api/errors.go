package api

import "net/http"

// Error codes. Every non-2xx response carries exactly one of them in an
// Error body; clients should branch on the code, not on the message.
const (
	// CodeInvalidJSON: the body is not well-formed JSON, not an object, or
	// has an unknown field or trailing data.
	CodeInvalidJSON = "invalid_json"
	// CodeInvalidArgument: a value is out of range or malformed (an empty,
	// over-long or non-UTF-8 name, an unknown type or consistency level, a
	// number that is not an int64).
	CodeInvalidArgument = "invalid_argument"
	// CodeWrongType: the update does not fit the namespace's type (an item
	// for a sum counter, a delta for a distinct counter).
	CodeWrongType = "wrong_type"
	// CodeWrongModel: the operation does not fit the namespace's model (a
	// set on an events namespace, an increment of an actor counter, a
	// clear of a native counter).
	CodeWrongModel = "wrong_model"
	// CodeTooLate: an events-model increment or clear was not written.
	// Inside the namespace's accept window the increment does not count
	// and never will — its seal did not name it, or a clear covers it — so
	// it may be sent again under a new request id. Beyond the accept
	// window it may have counted earlier; that is no longer known.
	CodeTooLate = "too_late"
	// CodeOverflow: the update would take the counter outside the int64 range.
	CodeOverflow = "overflow"
	// CodeNamespaceNotFound: the namespace does not exist.
	CodeNamespaceNotFound = "namespace_not_found"
	// CodeNotFound: no such route.
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed: the route exists but not with this method.
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeNamespaceExists: a namespace with that name already exists.
	CodeNamespaceExists = "namespace_exists"
	// CodeRequestConflict: the request id was already used for a different update.
	CodeRequestConflict = "request_conflict"
	// CodeVersionConflict: an actor set carries a version already stored
	// with a different value; nothing was written.
	CodeVersionConflict = "version_conflict"
	// CodeBodyTooLarge: the body exceeds the server's limit.
	CodeBodyTooLarge = "body_too_large"
	// CodeUnsupportedMediaType: a request with a body does not say
	// Content-Type application/json.
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeForbidden: the request came from a web page of another origin,
	// or named a Host this server does not answer to (a loopback server
	// answers only to loopback names); nothing was changed.
	CodeForbidden = "forbidden"
	// CodeQuotaExceeded: creating the namespace or queue would pass the
	// server's limit on how many there may be; nothing was created.
	CodeQuotaExceeded = "quota_exceeded"
	// CodeUnknownOutcome: the update may or may not have been counted.
	// Retrying with the same request id against the same server is safe.
	CodeUnknownOutcome = "unknown_outcome"
	// CodeNotApplied: the update was definitely not counted; retrying is safe.
	CodeNotApplied = "not_applied"
	// CodeUnavailable: the store cannot be reached (or the server is
	// shutting down); nothing was changed.
	CodeUnavailable = "unavailable"
	// CodeInternal: a bug or an unexpected store failure.
	CodeInternal = "internal"
	// CodeQueueNotFound: the queue does not exist.
	CodeQueueNotFound = "queue_not_found"
	// CodeQueueExists: a queue with that name already exists.
	CodeQueueExists = "queue_exists"
	// CodeStaleReceipt: the receipt's message was settled or delivered
	// again since; nothing was changed.
	CodeStaleReceipt = "stale_receipt"
	// CodeBelowFloor: a ledger debit would take the balance below the
	// namespace's floor; nothing was written for it.
	CodeBelowFloor = "below_floor"
	// CodeRightsHeld: the balance above a ledger's floor would cover the
	// debit, but other servers hold it as rights to debit for a while;
	// nothing was written for it, and a retry may succeed.
	CodeRightsHeld = "rights_held"
	// CodeDedupConflict: a message's dedup_id was used within the window
	// for a message with another body; nothing was written.
	CodeDedupConflict = "dedup_conflict"
	// CodeUnauthenticated: the server requires an API key and the request
	// carried none, or one that is malformed, unknown, revoked or wrong.
	CodeUnauthenticated = "unauthenticated"
	// CodeRateLimited: the API key has used up its request rate on this
	// server; Retry-After says when to send again. Nothing was done.
	CodeRateLimited = "rate_limited"
	// CodeKeyNotFound: no API key has that id.
	CodeKeyNotFound = "key_not_found"
	// CodeInsufficientScope: the API key is good but lacks the scope the
	// request needs (RFC 6750's name); nothing was done.
	CodeInsufficientScope = "insufficient_scope"
)

// codeStatus is the single source of truth for which status a code uses.
var codeStatus = map[string]int{
	CodeInvalidJSON:          http.StatusBadRequest,
	CodeInvalidArgument:      http.StatusBadRequest,
	CodeWrongType:            http.StatusBadRequest,
	CodeOverflow:             http.StatusBadRequest,
	CodeWrongModel:           http.StatusBadRequest,
	CodeTooLate:              http.StatusConflict,
	CodeNamespaceNotFound:    http.StatusNotFound,
	CodeNotFound:             http.StatusNotFound,
	CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	CodeNamespaceExists:      http.StatusConflict,
	CodeRequestConflict:      http.StatusConflict,
	CodeVersionConflict:      http.StatusConflict,
	CodeBodyTooLarge:         http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	CodeForbidden:            http.StatusForbidden,
	CodeQuotaExceeded:        http.StatusForbidden,
	CodeUnknownOutcome:       http.StatusServiceUnavailable,
	CodeNotApplied:           http.StatusServiceUnavailable,
	CodeUnavailable:          http.StatusServiceUnavailable,
	CodeInternal:             http.StatusInternalServerError,
	CodeQueueNotFound:        http.StatusNotFound,
	CodeQueueExists:          http.StatusConflict,
	CodeStaleReceipt:         http.StatusConflict,
	CodeDedupConflict:        http.StatusConflict,
	CodeBelowFloor:           http.StatusConflict,
	CodeRightsHeld:           http.StatusConflict,
	CodeUnauthenticated:      http.StatusUnauthorized,
	CodeRateLimited:          http.StatusTooManyRequests,
	CodeKeyNotFound:          http.StatusNotFound,
	CodeInsufficientScope:    http.StatusForbidden,
}

// Codes returns every error code, in no particular order.
func Codes() []string {
	out := make([]string, 0, len(codeStatus))
	for c := range codeStatus {
		out = append(out, c)
	}
	return out
}

// Status returns the HTTP status that accompanies code, or 500 for a code
// this package does not know.
func Status(code string) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Retryable reports whether an update that failed with code may be sent
// again with the same request id: the server either did not apply it or
// will recognise the retry.
func Retryable(code string) bool {
	return Status(code) == http.StatusServiceUnavailable
}
