//go:build !linux

package memory

import "errors"

// releaseBinaryPages is Linux's (MADV_PAGEOUT); elsewhere the pages stay.
func releaseBinaryPages() (int, error) {
	return 0, errors.New("releasing the binary's pages is implemented on Linux only")
}
