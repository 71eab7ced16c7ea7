package v1alpha1

import (
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestRolesAreTheDrivers: the drivers see spec.role as drivers.Role; the
// two spell every role alike.
func TestRolesAreTheDrivers(t *testing.T) {
	for api, d := range map[Role]drivers.Role{RoleReadWrite: drivers.RoleReadWrite, RoleReadOnly: drivers.RoleReadOnly, RoleWriteOnly: drivers.RoleWriteOnly} {
		if string(api) != string(d) {
			t.Errorf("API role %q is drivers.Role %q", api, d)
		}
	}
	if drivers.Role("").OrDefault() != drivers.Role(RoleReadWrite) {
		t.Errorf("the drivers' default role is not the API's default, %s", RoleReadWrite)
	}
}
