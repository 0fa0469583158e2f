// Package refreshcache keeps values read from the store — a namespace's
// cuts, a queue's record — each trusted for a fixed time after the read
// that found it began, and read again after that. Operations that need a
// value while it is being read share that one read; a value past half its
// time is read again in the background, so keys in steady use rarely wait
// for the store; Forget makes a read already under way count for nothing.
// The package lifecycle's delete argument, and the queue's, rest on one
// rule it keeps: a value is never used later than Refresh after its read
// began.
package refreshcache
