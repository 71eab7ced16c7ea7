package s3

import (
	"errors"
	"regexp"

	"github.com/Yolean/buckety-controller/drivers"
)

// byteSizePattern is the syntax of quota and softQuota: Kubernetes
// quantity syntax (resource.Quantity) for a whole number of bytes: digits,
// then optionally a fraction, and a suffix k, M, G, T, P, E (powers of
// 1000), Ki, Mi, Gi, Ti, Pi, Ei (powers of 1024) or an exponent (1e9),
// with a digit other than 0 somewhere (no zero size). The sub-unit
// suffixes (m, u, n) and signs are left out: they never name a size in
// bytes. The parameters schema publishes the same pattern.
const byteSizePattern = `^([0-9]*[1-9][0-9]*(\.[0-9]+)?|[0-9]+\.[0-9]*[1-9][0-9]*)([kMGTPE]|[KMGTPE]i|[eE][0-9]+)?$`

var byteSizeRE = regexp.MustCompile(byteSizePattern)

// errByteSizeSyntax says what a byte size looks like.
var errByteSizeSyntax = errors.New("want a byte size more than 0: a whole number of bytes, or one with a suffix k, M, G, T, P, E (powers of 1000) or Ki, Mi, Gi, Ti, Pi, Ei (powers of 1024), as 10Gi or 500M")

// parseByteSize reads a byte size: more than 0 (byteSizePattern), and
// whole, computed exactly (drivers.ParseBytes: 1.5Ki is 1536 bytes; 1.5 is
// no number of bytes).
func parseByteSize(s string) (int64, error) {
	if !byteSizeRE.MatchString(s) {
		return 0, errByteSizeSyntax
	}
	return drivers.ParseBytes(s)
}
