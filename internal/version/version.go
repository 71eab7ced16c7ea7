// Package version holds the build's version, stamped by the Makefile with
// -ldflags "-X github.com/Yolean/buckety-controller/internal/version.Version=v1.2.3".
// Driver versions are separate (each driver package has its own), because a
// driver's major gates compatibility of existing resources while the product
// version does not.
package version

// Version is the product version of this build; "dev" when not stamped.
var Version = "dev"
