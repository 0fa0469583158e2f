// Package names holds the one rule for the names of namespaces, queues,
// counters and ledgers, and the stricter rule for the names of new
// namespaces and queues.
//
// Any name is 1 to 256 bytes of UTF-8. A new namespace or queue name must
// also be made of ASCII letters, digits, '_', '-', '.' and ':' and start
// with a letter or digit: such a name stands in a URL path, a shell
// command, a metric label and a log line as it is, and cannot be "." or
// "..", which HTTP clients and proxies rewrite, so it can always be
// reached again. Counter and ledger names keep the wider rule, since they
// are often ids from elsewhere (e-mail addresses, URLs); send them
// percent-encoded.
package names
