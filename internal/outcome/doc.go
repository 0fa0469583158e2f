// Package outcome defines, once, the errors that tell a caller what became
// of a request: applied or not, known or not, refused and why. The engines
// return them (wrapped with detail) and the root package re-exports them
// under the same names, so errors.Is works with one value whichever layer
// produced the error, and the server maps each to its wire code in one
// place. It depends on nothing but the standard library, so every engine
// can import it.
//
// The storage seam keeps its own, lower vocabulary (driver.ErrUnknownOutcome
// and the rest): an engine decides from a driver's outcome what the
// request's outcome is, and the two must not be confused.
package outcome
