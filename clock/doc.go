// Package clock lets time be injected: production code reads a Clock, tests
// drive a Manual one so that lifetimes of hours pass in microseconds.
package clock
