package access

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/Yolean/buckety-controller/drivers"
)

// keyedIssuer is a CredentialIssuer whose Secrets hold user and password.
type keyedIssuer struct{}

func (keyedIssuer) Issuing(context.Context) (drivers.Issuing, error) {
	return drivers.Issuing{PerAccess: true}, nil
}
func (keyedIssuer) Principal(a drivers.Access, serial int) string { return "u-" + a.UID }
func (keyedIssuer) InspectPrincipal(context.Context, string) (bool, error) {
	return false, nil
}
func (keyedIssuer) CredentialKeys() (string, string) { return "user", "password" }

// TestPrefetchKeepsBoundedCredentialsAsFresh: what the start's list finds
// under the keys of a backend that issues per-access credentials is kept
// as read afresh, only while it is
// the size of a credential, and never over what a pass recorded.
func TestPrefetchKeepsBoundedCredentialsAsFresh(t *testing.T) {
	var r Reconciler
	keys := []issuedKey{{sc: keyedIssuer{}, principal: "user", secret: "password"}}
	secret := func(rv string, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{Data: map[string][]byte{}}
		s.ResourceVersion = rv
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	r.knowIssuedSecret(keys, "a", secret("7", map[string]string{"user": "u-a", "password": "pw"}))
	if got, fresh, ok := r.secrets.get("a", "7", "u-a"); !ok || !fresh || got != "pw" {
		t.Errorf("want pw kept as fresh at 7, got %q fresh=%v ok=%v", got, fresh, ok)
	}
	if _, _, ok := r.secrets.get("a", "8", "u-a"); ok {
		t.Error("want nothing at another resourceVersion")
	}
	huge := strings.Repeat("x", 1<<20)
	for uid, data := range map[types.UID]map[string]string{
		"big-user":     {"user": huge, "password": "pw"},
		"big-password": {"user": "u-big-password", "password": huge},
		"no-user":      {"password": "pw"},
		"no-password":  {"user": "u-no-password"},
	} {
		r.knowIssuedSecret(keys, uid, secret("1", data))
		if r.secrets.has(uid) {
			t.Errorf("%s: want nothing kept", uid)
		}
	}
	r.secrets.put("b", "9", "u-b", "written")
	r.knowIssuedSecret(keys, "b", secret("5", map[string]string{"user": "u-b", "password": "listed"}))
	if got, fresh, ok := r.secrets.get("b", "9", "u-b"); !ok || fresh || got != "written" {
		t.Errorf("want the pass's record kept over the list's, got %q fresh=%v ok=%v", got, fresh, ok)
	}
}
