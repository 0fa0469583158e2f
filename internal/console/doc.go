// Package console is the operator's web console that `abacus serve` serves
// under /ui: queues with their depth, oldest waiting message, shard lag and
// lease holders; a queue's dead letters with their last error, to requeue
// or delete; pause and resume; namespaces with their counters and values.
//
// The pages are rendered on the server from html/template files embedded
// in the binary, with one stylesheet and no script, so the console needs
// no CDN, no build step and nothing a Content-Security-Policy of
// "default-src 'none'" would block. Every change is an HTML form posted to
// the same origin; the server's cross-origin protection refuses one sent
// from another site.
//
// # Who may see and do what
//
// The console asks the server's Gate. When the server requires API keys,
// the operator signs in once with a key, which the console keeps in an
// HttpOnly, SameSite=Strict cookie scoped to /ui and checks again on every
// request, exactly as the API checks a bearer token: a revoked key stops
// working at once (within the key cache's lifetime), its rate limit
// applies, and each page shows only what the key may read. Requeueing,
// deleting, pausing and resuming need the admin role on the queue, as
// their API routes do. When the server asks for no keys, the console is as
// open as the API.
package console
