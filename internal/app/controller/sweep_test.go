package controller

import (
	"bytes"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
)

func TestSweepFlags(t *testing.T) {
	reg := drivers.NewRegistry(&drivertest.Driver{Named: "test"})
	dir := writeConfig(t, "backends:\n- {name: a, driver: test, config: {endpoint: x}}\n")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--drift-sweep-interval", "100ms"}, 2, "--drift-sweep-interval 100ms: want 0 (no sweep) or at least 1s"},
		{[]string{"--swept-recheck-interval", "-1s"}, 2, "--swept-recheck-interval -1s: want a positive duration"},
		{[]string{"--drift-sweep-interval", "0"}, 0, ""},
		{[]string{"--drift-sweep-interval", "10s", "--swept-recheck-interval", "1h"}, 0, ""},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		args := append([]string{"check", "-c", dir}, c.args...)
		if code := run(args, &out, &errb, reg); code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: want exit %d and %q, got %d and %q", c.args, c.code, c.want, code, errb.String())
		}
	}
}
