// Package api holds the wire format of the Abacus HTTP API: the JSON request
// and response bodies, the error codes and the HTTP status each code travels
// with. The server (package server) and the Go client (package client) both
// build on these types, so the two cannot drift apart silently.
//
// The API is documented for other languages in openapi.yaml, which is
// embedded here as OpenAPI and served by the server at /v1/openapi.yaml.
//
// # Compatibility
//
// Request decoding is strict: unknown fields, trailing data and numbers that
// do not fit the field are refused, so a typo in a field name is reported
// instead of silently counting the wrong thing. Responses may gain fields in
// later releases; clients should ignore fields they do not know.
package api
