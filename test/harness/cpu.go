package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the kernel's USER_HZ, the unit of the CPU times in /proc: 100
// on every Linux architecture Go runs on (Prometheus' procfs assumes the
// same), and reading sysconf(_SC_CLK_TCK) would need cgo.
const userHZ = 100

// CPUSeconds is the user plus system CPU time the process pid has used, in
// seconds (utime and stime of /proc/PID/stat). The benchmarks compare
// processes with it the same way whatever runtime metrics they export.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(string(b))
}

// parseProcStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/PID/stat line. The command name (field 2) is in parentheses and
// may hold spaces, so fields are counted from its closing parenthesis.
func parseProcStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/PID/stat %q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, f[11]; stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/PID/stat %q: want at least 15 fields", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/stat %q: %w", stat, err)
		}
		ticks += n
	}
	return float64(ticks) / userHZ, nil
}

// cpuTimes are the machine's total and idle (idle plus iowait) jiffies
// from the "cpu" line of /proc/stat.
type cpuTimes struct{ total, idle int64 }

func machineCPU() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	return parseProcStat(string(b))
}

// parseProcStat reads the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal (guest time is already in user).
func parseProcStat(s string) (cpuTimes, error) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var ct cpuTimes
		for i, v := range f[1:9] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("/proc/stat %q: %w", line, err)
			}
			ct.total += n
			if i == 3 || i == 4 {
				ct.idle += n
			}
		}
		return ct, nil
	}
	return cpuTimes{}, fmt.Errorf("/proc/stat: no cpu line")
}

// MachineBusy is the fraction of the machine's CPU time (all cores) that
// was not idle over window.
func MachineBusy(window time.Duration) (float64, error) {
	a, err := machineCPU()
	if err != nil {
		return 0, err
	}
	time.Sleep(window)
	b, err := machineCPU()
	if err != nil {
		return 0, err
	}
	return busyBetween(a, b), nil
}

func busyBetween(a, b cpuTimes) float64 {
	total := b.total - a.total
	if total <= 0 {
		return 0
	}
	return 1 - float64(b.idle-a.idle)/float64(total)
}

// WaitIdle waits until the machine was at most maxBusy busy (a fraction)
// over a 3 s window, checking for at most wait. It returns the last
// figure and whether it was reached, so a benchmark on a machine that never
// calms down says so in its table instead of hanging.
func WaitIdle(maxBusy float64, wait time.Duration) (float64, bool, error) {
	deadline := time.Now().Add(wait)
	for {
		busy, err := MachineBusy(3 * time.Second)
		if err != nil {
			return 0, false, err
		}
		if busy <= maxBusy {
			return busy, true, nil
		}
		if time.Now().After(deadline) {
			return busy, false, nil
		}
	}
}
