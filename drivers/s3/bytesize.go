package s3

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
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

// suffixPowers are the quantity suffixes as base and exponent.
var suffixPowers = map[string][2]int64{
	"": {10, 0}, "k": {10, 3}, "M": {10, 6}, "G": {10, 9}, "T": {10, 12}, "P": {10, 15}, "E": {10, 18},
	"Ki": {2, 10}, "Mi": {2, 20}, "Gi": {2, 30}, "Ti": {2, 40}, "Pi": {2, 50}, "Ei": {2, 60},
}

// parseByteSize reads a byte size: more than 0, and whole (1.5Ki is 1536
// bytes; 1.5 is no number of bytes). It is computed exactly, not through
// resource.Quantity, which clamps sizes beyond int64 (8Ei) to its largest.
func parseByteSize(s string) (int64, error) {
	m := byteSizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, errByteSizeSyntax
	}
	n, ok := new(big.Rat).SetString(m[1])
	if !ok {
		return 0, errByteSizeSyntax
	}
	base, exp := suffixPowers[m[3]][0], suffixPowers[m[3]][1]
	if _, isSuffix := suffixPowers[m[3]]; !isSuffix {
		// An exponent: e or E and digits.
		e, err := strconv.ParseInt(m[3][1:], 10, 64)
		if err != nil || e > 30 {
			return 0, fmt.Errorf("%s is more bytes than the largest size, %d", s, int64(1<<63-1))
		}
		base, exp = 10, e
	}
	n.Mul(n, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(base), big.NewInt(exp), nil)))
	switch {
	case !n.IsInt():
		return 0, fmt.Errorf("%s is %s bytes, not a whole number of bytes", s, n.FloatString(3))
	case !n.Num().IsInt64():
		return 0, fmt.Errorf("%s is more bytes than the largest size, %d", s, int64(1<<63-1))
	}
	return n.Num().Int64(), nil
}
