// Package all wires every driver compiled into the buckety binaries. It is
// the one place a driver is registered: adding a driver is one line here.
package all

import (
	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/kadm"
	"github.com/Yolean/buckety-controller/drivers/s3"
)

// Registry returns a registry of every driver in this build.
func Registry() *drivers.Registry {
	return drivers.NewRegistry(
		kadm.New(),
		s3.New(),
	)
}
