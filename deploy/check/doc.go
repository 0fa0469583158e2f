// Package check holds no code: its test parses the alert rules in
// deploy/prometheus with the parser promtool's "check rules" uses
// (rulefmt), and the dashboard's queries with the PromQL parser.
//
// It is a module of its own so that Prometheus's server module, which the
// parsers live in, is not a dependency of Abacus; `make lint` runs it.
package check
