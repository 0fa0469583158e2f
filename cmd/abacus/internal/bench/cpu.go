package bench

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// cpuSample is a snapshot of CPU time used so far, by this process and by
// the whole machine. The benchmark shares a small machine with the store
// under test, so how much of it the client side ate is part of the result.
type cpuSample struct {
	wall time.Time

	proc   time.Duration // user+system time of this process
	procOK bool

	hostBusy, hostTotal uint64 // jiffies summed over all CPUs, from /proc/stat
	hostOK              bool

	store   uint64 // utime+stime jiffies of the store's process (StorePID)
	storeOK bool
}

// sampleCPU takes a snapshot; storePID, when not 0, is a local store
// process (Cassandra's JVM) whose CPU time is sampled too.
func sampleCPU(storePID int) cpuSample {
	s := cpuSample{wall: time.Now()}
	s.proc, s.procOK = processCPU()
	s.hostBusy, s.hostTotal, s.hostOK = hostCPU()
	if storePID > 0 {
		s.store, s.storeOK = pidCPU(storePID)
	}
	return s
}

// cores is the average number of cores busy between two samples: of this
// process, of the whole machine and of the store's process; -1 where
// unknown.
type cores struct{ proc, host, store float64 }

func (s cpuSample) coresSince(a cpuSample) cores {
	c := cores{-1, -1, -1}
	wall := s.wall.Sub(a.wall).Seconds()
	if wall > 0 && s.procOK && a.procOK {
		c.proc = (s.proc - a.proc).Seconds() / wall
	}
	if wall > 0 && s.storeOK && a.storeOK && s.store >= a.store {
		c.store = float64(s.store-a.store) / userHZ / wall
	}
	if s.hostOK && a.hostOK && s.hostTotal > a.hostTotal {
		// Jiffies of all CPUs: busy/total is the busy fraction of the
		// machine, independent of the kernel's tick rate.
		c.host = float64(s.hostBusy-a.hostBusy) / float64(s.hostTotal-a.hostTotal) * float64(runtime.NumCPU())
	}
	return c
}

// userHZ is the unit of the CPU times in /proc/PID/stat. It is part of
// Linux's user-space ABI and 100 on every architecture Go supports.
const userHZ = 100

// pidCPU returns utime+stime of process pid from /proc/PID/stat (Linux).
func pidCPU(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// fields are counted after its closing parenthesis.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// After ")": state is field 3, so utime (14) and stime (15) are f[11], f[12].
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return ut + st, true
}

// hostCPU reads the aggregate line of /proc/stat (Linux only). Idle and
// iowait count as not busy.
func hostCPU() (busy, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, false
	}
	// user nice system idle iowait irq softirq steal [guest guest_nice]:
	// guest time is already included in user and nice.
	for i, v := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return busy, total, true
}

// loadAvg returns the first three fields of /proc/loadavg, or "".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// memTotal returns MemTotal from /proc/meminfo, like "23.4 GiB", or "".
func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					return strconv.FormatFloat(kb/(1<<20), 'f', 1, 64) + " GiB"
				}
			}
		}
	}
	return ""
}
