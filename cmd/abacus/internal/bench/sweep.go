package bench

import "fmt"

// Values of Row.Sweep.
const (
	// SweepStep marks a row measured at one level of a sweep and not
	// chosen; ratios and charts leave it out.
	SweepStep = "step"
	// SweepSustainable marks the level a sweep chose.
	SweepSustainable = "sustainable"
)

// swept runs measure once, or, with Config.Sweep, at each concurrency of
// the sweep, and returns its rows. A closed loop of a fixed number of
// callers measures latency at that load, not what a model can sustain: one
// model saturates at 64 callers, another needs 512 to fill its group
// commits. The sweep raises the callers until throughput stops rising by
// Config.SweepGain or the p99 passes Config.SweepP99, and marks the level
// with the highest throughput within the limit (the first level when none
// is) as the one ratios use.
func (s *suite) swept(measure func() (Row, error)) ([]Row, error) {
	if len(s.cfg.Sweep) == 0 {
		r, err := measure()
		if err != nil {
			return nil, err
		}
		return []Row{r}, nil
	}
	concurrency, runID := s.cfg.Options.Concurrency, s.runID
	defer func() { s.cfg.Options.Concurrency, s.runID = concurrency, runID }()
	var rows []Row
	best := -1
	for i, c := range s.cfg.Sweep {
		// New counters for every level: each row's read-back check counts
		// its own writes only.
		s.cfg.Options.Concurrency, s.runID = c, fmt.Sprintf("%s-c%d", runID, c)
		r, err := measure()
		if err != nil {
			return rows, err
		}
		r.Sweep = SweepStep
		r.Scenario = fmt.Sprintf("%s, %d callers", r.Scenario, c)
		rows = append(rows, r)
		if r.P99 > s.cfg.SweepP99 {
			break
		}
		rising := best < 0 || r.OpsPerSec > rows[best].OpsPerSec*(1+s.cfg.SweepGain)
		if best < 0 || r.OpsPerSec > rows[best].OpsPerSec {
			best = i
		}
		if !rising {
			break
		}
	}
	if best < 0 {
		best = 0
		rows[0].Check += fmt.Sprintf(" (p99 above the sweep's %v at every level tried)", s.cfg.SweepP99)
	}
	rows[best].Sweep = SweepSustainable
	rows[best].Scenario += ", sustainable"
	return rows, nil
}

// withoutSweepSteps returns the rows a sweep did not leave behind: every
// row of a run without a sweep, the sustainable one of each sweep.
func withoutSweepSteps(rows []Row) []Row {
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		if r.Sweep != SweepStep {
			out = append(out, r)
		}
	}
	return out
}
