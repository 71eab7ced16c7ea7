//go:build linux

package memory

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestExeRanges(t *testing.T) {
	maps := `00400000-017bb000 r-xp 00000000 fe:00 99 /buckety-controller
017bb000-02afd000 r--p 013bb000 fe:00 99 /buckety-controller
02afd000-02b9e000 rw-p 026fd000 fe:00 99 /buckety-controller
02b9e000-04bef000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 fe:01 99 /other-device-same-inode
7f0000002000-7f0000003000 r--p 00000000 fe:00 98 /other-file
7fff6979c000-7fff697bd000 rw-p 00000000 00:00 0 [stack]
`
	got, err := exeRanges(strings.NewReader(maps), unix.Mkdev(0xfe, 0), 99)
	if err != nil {
		t.Fatal(err)
	}
	want := []addrRange{{0x400000, 0x17bb000}, {0x17bb000, 0x2afd000}}
	if len(got) != len(want) {
		t.Fatalf("want %v, got %v", want, got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("range %d: want %v, got %v", i, want[i], got[i])
		}
	}
	if _, err := exeRanges(strings.NewReader("zz-yy r--p 0 fe:00 99 /x\n"), unix.Mkdev(0xfe, 0), 99); err == nil {
		t.Error("want an error for a bad range, got none")
	}
}

// TestReleaseBinaryPages runs the real madvise on this test binary: it
// must find its mappings and the kernel must accept the advice.
func TestReleaseBinaryPages(t *testing.T) {
	n, err := releaseBinaryPages()
	if err != nil {
		t.Skipf("this kernel refuses MADV_PAGEOUT: %v", err)
	}
	if n == 0 {
		t.Error("want the binary's read-only mappings, got none")
	}
}
