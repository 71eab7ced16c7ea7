package controller

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// DefaultGOGC is the garbage collector's target (the percentage of the live
// heap it lets grow before collecting) when the GOGC environment variable
// is unset. Go's own default, 100, lets the heap reach twice the live data,
// and the controller's heap is nearly all its informer caches, which live
// as long as the process: at 1000 Bucketies the headroom was as large as
// the live heap. 25 keeps the heap within a quarter of the live data for a
// few more collections, each small (see docs/performance.md, Memory). An
// operator's GOGC (including GOGC=off) wins; GOMEMLIMIT works as ever.
const DefaultGOGC = 25

// applyGCDefault sets DefaultGOGC unless getenv("GOGC") is set, and
// returns the setting in effect, for the start-up log.
func applyGCDefault(getenv func(string) string) string {
	if v := getenv("GOGC"); v != "" {
		return v
	}
	debug.SetGCPercent(DefaultGOGC)
	return strconv.Itoa(DefaultGOGC)
}

// startupPages hands the kernel back, once the caches have synced, the
// pages of the controller's own binary that it has mapped so far: most
// were touched once, at start (package initialisation, API type
// registration, flag and config parsing, the caches' first list), and
// would otherwise stay resident, about 10 MiB of the 31 MiB the binary
// maps. They are clean pages of the executable file, so nothing is lost:
// what the controller runs afterwards is read back on first use, and stays
// (see docs/performance.md, Memory). It never fails the controller: a
// kernel without MADV_PAGEOUT (before Linux 5.4) or a sandbox that refuses
// it only leaves the pages where they were.
type startupPages struct {
	// synced waits for the caches.
	synced func(context.Context) bool
	log    logr.Logger
}

// NeedLeaderElection is false: a replica that waits for the lease has paid
// the same start-up cost.
func (s *startupPages) NeedLeaderElection() bool { return false }

// Start waits for the caches, then releases the binary's pages once.
func (s *startupPages) Start(ctx context.Context) error {
	if !s.synced(ctx) {
		return nil
	}
	n, err := releaseBinaryPages()
	if err != nil {
		s.log.Info("could not release the binary's start-up pages; they stay resident", "error", err.Error())
		return nil
	}
	s.log.V(1).Info("released the binary's start-up pages", "mappedBytes", n)
	return nil
}

// releaseBinaryPages asks the kernel to reclaim (MADV_PAGEOUT) the
// read-only mappings of the running executable (code, read-only data), and
// returns their size. Writable mappings (data, heap) are left alone.
func releaseBinaryPages() (int, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	ranges, err := exeRanges(f, uint64(st.Dev), st.Ino)
	if err != nil {
		return 0, err
	}
	if len(ranges) == 0 {
		return 0, errors.New("no read-only mapping of /proc/self/exe in /proc/self/maps")
	}
	total := 0
	for _, r := range ranges {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_PAGEOUT); e != 0 {
			return total, fmt.Errorf("madvise(MADV_PAGEOUT): %w", e)
		}
		total += int(r.end - r.start)
	}
	return total, nil
}

// addrRange is a mapping's [start, end).
type addrRange struct{ start, end uintptr }

// exeRanges reads /proc/PID/maps lines ("start-end perms offset maj:min
// inode path") and returns the mappings of the file dev:ino that are not
// writable.
func exeRanges(r io.Reader, dev, ino uint64) ([]addrRange, error) {
	var out []addrRange
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || len(f[1]) < 2 || f[1][1] == 'w' {
			continue
		}
		if i, err := strconv.ParseUint(f[4], 10, 64); err != nil || i != ino {
			continue
		}
		maj, min, ok := hexPair(f[3], ":", 32)
		if !ok || unix.Mkdev(uint32(maj), uint32(min)) != dev {
			continue
		}
		a, b, ok := hexPair(f[0], "-", 64)
		if !ok || b <= a {
			return nil, fmt.Errorf("/proc/self/maps: bad range %q", f[0])
		}
		out = append(out, addrRange{uintptr(a), uintptr(b)})
	}
	return out, sc.Err()
}

// hexPair parses two hexadecimal numbers of at most bits bits separated by
// sep, as a maps line's "start-end" and "major:minor".
func hexPair(s, sep string, bits int) (a, b uint64, ok bool) {
	x, y, ok := strings.Cut(s, sep)
	if !ok {
		return 0, 0, false
	}
	a, err1 := strconv.ParseUint(x, 16, bits)
	b, err2 := strconv.ParseUint(y, 16, bits)
	return a, b, err1 == nil && err2 == nil
}
