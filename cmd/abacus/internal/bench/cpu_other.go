//go:build !unix

package bench

import "time"

// processCPU is not implemented off Unix; reports show the CPU as unknown.
func processCPU() (time.Duration, bool) { return 0, false }
