package api

import "time"

// CreateKeyRequest is the body of POST /v1/keys.
type CreateKeyRequest struct {
	// Name labels the key; optional.
	Name string `json:"name,omitempty"`
	// Scopes are the key's grants: "ns:NAME:ROLE", "queue:NAME:ROLE" (NAME
	// may be "*") or "*:ROLE", with ROLE read, write or admin. At least one.
	Scopes []string `json:"scopes"`
	// RateLimit is requests per second on each server; 0 or absent: none.
	RateLimit float64 `json:"rate_limit,omitempty"`
	// Burst is how many requests may come at once; default one second's worth.
	Burst int `json:"burst,omitempty"`
}

// Key describes an API key; never its secret.
type Key struct {
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"`
	Scopes    []string  `json:"scopes"`
	RateLimit float64   `json:"rate_limit,omitempty"`
	Burst     int       `json:"burst,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// CreatedKey is the answer to POST /v1/keys: the key and its token, which
// the server shows this once and keeps only as a hash.
type CreatedKey struct {
	Key
	Token string `json:"token"`
}

// KeyList is the answer to GET /v1/keys.
type KeyList struct {
	Keys []Key `json:"keys"`
	// Next is the ?after= of the next page; empty on the last page.
	Next string `json:"next,omitempty"`
}
