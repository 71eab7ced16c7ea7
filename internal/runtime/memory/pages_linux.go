//go:build linux

package memory

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

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
