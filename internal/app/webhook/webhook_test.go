package webhook

import (
	"bytes"
	"strings"
	"testing"
)

// TestRateLimitFlags: the webhook takes the same client rate-limit flags
// as the controller and refuses a bad value before anything else.
func TestRateLimitFlags(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--kube-api-qps", "0"}, 2, "buckety-webhook: --kube-api-qps 0: want a positive number of requests per second, or -1"},
		{[]string{"--kube-api-qps", "20", "--kube-api-burst", "-2"}, 2, "buckety-webhook: --kube-api-burst -2"},
		{[]string{"--kube-api-qps", "20", "--kube-api-burst", "40", "--version"}, 0, ""},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := Main(c.args, &out, &errb)
		if code != c.code || c.want != "" && !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: want exit %d and %q, got %d %q", c.args, c.code, c.want, code, errb.String())
		}
	}
}
