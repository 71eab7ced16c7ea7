package drivers

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a driver SemVer, major.minor.patch with an optional
// pre-release suffix. Drivers keep theirs in a package variable that a build
// overrides with -ldflags "-X <pkg>.version=1.2.3".
type Version struct {
	Major, Minor, Patch int64
	// Pre is the pre-release part after "-", if any.
	Pre string
}

// String renders the version as major.minor.patch[-pre].
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// SchemaDir is the schema directory name for this version, v<major>.<minor>:
// minor and patch releases update schemas in place, majors rotate the path.
func (v Version) SchemaDir() string { return fmt.Sprintf("v%d.%d", v.Major, v.Minor) }

// ParseVersion parses "1.2.3" or "1.2.3-rc.1" (a leading "v" is accepted).
func ParseVersion(s string) (Version, error) {
	core, pre, _ := strings.Cut(strings.TrimPrefix(s, "v"), "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("version %q: want major.minor.patch", s)
	}
	var n [3]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 || (len(p) > 1 && p[0] == '0') {
			return Version{}, fmt.Errorf("version %q: %q is not a non-negative integer without leading zeros", s, p)
		}
		n[i] = v
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2], Pre: pre}, nil
}

// MustParseVersion is ParseVersion for a driver's compiled-in version: a
// malformed -X value is a build error and stops the binary at start-up.
func MustParseVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic("drivers: bad compiled-in version: " + err.Error())
	}
	return v
}
