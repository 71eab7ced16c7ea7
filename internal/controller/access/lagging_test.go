package access

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestBoundToBuckety: records granted on the Buckety of a UID, or on none
// recorded (before credentials were bound), tie the access to it; records
// of a Buckety made again under the name do not.
func TestBoundToBuckety(t *testing.T) {
	rec := func(uid string, several ...string) v1.BucketyCredential {
		c := v1.BucketyCredential{Spec: v1.BucketyCredentialSpec{BucketyUID: uid}}
		for _, u := range several {
			c.Spec.Resources = append(c.Spec.Resources, v1.CredentialResource{BucketyUID: u})
		}
		return c
	}
	const now types.UID = "b-now"
	for name, tc := range map[string]struct {
		creds []v1.BucketyCredential
		want  bool
	}{
		"no records (shared keys)":               {nil, true},
		"granted on it":                          {[]v1.BucketyCredential{rec("b-now")}, true},
		"granted before records were bound":      {[]v1.BucketyCredential{rec("")}, true},
		"granted on the one made before":         {[]v1.BucketyCredential{rec("b-old")}, false},
		"one of several is it":                   {[]v1.BucketyCredential{rec("b-other", "b-other", "b-now")}, true},
		"several, none of them it":               {[]v1.BucketyCredential{rec("b-other", "b-other", "b-old")}, false},
		"an old record beside one granted on it": {[]v1.BucketyCredential{rec("b-old"), rec("b-now")}, true},
	} {
		if got := boundToBuckety(tc.creds, now); got != tc.want {
			t.Errorf("%s: boundToBuckety = %v, want %v", name, got, tc.want)
		}
	}
}
