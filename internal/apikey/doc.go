// Package apikey is the machinery of API keys: the token format, the
// scopes a key carries and what they allow, hashing secrets with a
// memory-hard KDF, and Keys, which creates, lists, revokes and
// authenticates keys against a driver.APIKeys store.
//
// A token is "abk_" + ID + "_" + secret. The ID is public (it names the
// key in lists and logs); the secret is 32 random bytes, base64url, stored
// only as its argon2id hash. Because hashing is deliberately slow (tens of
// milliseconds), Keys remembers tokens it has verified for CacheTTL and
// re-reads the key's record after that, so a revocation made on another
// server takes effect within CacheTTL; on the server that revoked it, at
// once.
package apikey
