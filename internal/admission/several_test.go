package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

const severalConfig = `backends:
- name: kafka
  driver: kadm
  config: {seedBrokers: ['kafka:9092']}
  limits: {bucketyRefsPerAccess: 3}
- name: other
  driver: kadm
  service: other
  config: {seedBrokers: ['other:9092']}
- name: minio
  driver: s3
  config: {implementation: minio, endpoint: 'http://minio:9000', accessKeyID: '${AK}', secretAccessKey: '${SK}'}
`

// severalValidators knows Bucketies app/a, app/b, app/c, app/d on kafka,
// app/elsewhere on other, app/x and app/y on minio, and payments/orders on
// kafka sharing ReadOnly with namespace app.
func severalValidators(t testing.TB, extra ...*v1.Buckety) *Validators {
	t.Helper()
	known := map[string]*v1.Buckety{}
	add := func(b *v1.Buckety) { known[b.Namespace+"/"+b.Name] = b }
	for name, backend := range map[string]string{"a": "kafka", "b": "kafka", "c": "kafka", "d": "kafka", "elsewhere": "other", "x": "minio", "y": "minio"} {
		add(&v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name}, Spec: v1.BucketySpec{Backend: backend}})
	}
	add(&v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "orders"}, Spec: v1.BucketySpec{Backend: "kafka",
		Sharing: []v1.SharingRule{{Namespace: "app", Roles: []v1.Role{v1.RoleReadOnly}}}}})
	for _, b := range extra {
		add(b)
	}
	v, err := New(webhookConfig(t, severalConfig), func(_ context.Context, ns, name string) (*v1.Buckety, bool) {
		b, ok := known[ns+"/"+name]
		return b, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	return v.WithNamespaceLabels(func(context.Context, string) (map[string]string, error) { return nil, nil })
}

func several(role v1.Role, formats []string, refs ...string) *v1.BucketyAccess {
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "multi"},
		Spec: v1.BucketyAccessSpec{CredentialsSecretName: "multi", Role: role, SecretFormats: formats}}
	for _, r := range refs {
		ns, name, ok := strings.Cut(r, "/")
		if !ok {
			ns, name = "", r
		}
		a.Spec.BucketyRefs = append(a.Spec.BucketyRefs, v1.BucketyReference{Namespace: ns, Name: name})
	}
	return a
}

// TestSeveralAccessAdmission: an access naming several Bucketies is
// admitted when every one is on one backend, those of other namespaces
// share its role, none is named twice, there are no more than the
// backend allows and its secret formats hold several; each refusal names
// the field and what is wrong.
func TestSeveralAccessAdmission(t *testing.T) {
	v := AccessValidator{severalValidators(t)}
	for _, c := range []struct {
		name string
		a    *v1.BucketyAccess
		want []string // nil: admitted
	}{
		{"three of one backend, one shared", several(v1.RoleReadOnly, nil, "a", "b", "payments/orders"), nil},
		{"the access's own namespace spelled out", several(v1.RoleReadOnly, nil, "a", "app/b"), nil},
		{"more than the backend allows", several(v1.RoleReadOnly, nil, "a", "b", "c", "d"),
			[]string{"spec.bucketyRefs: Too many: 4: must have at most 3 items"}},
		{"one named twice", several(v1.RoleReadOnly, nil, "a", "app/a"),
			[]string{"spec.bucketyRefs[1]: Duplicate value", "Buckety app/a, as spec.bucketyRefs[0]"}},
		{"two backends", several(v1.RoleReadOnly, nil, "a", "elsewhere"),
			[]string{"spec.bucketyRefs[1]", "Buckety elsewhere is on backend other and a on backend kafka"}},
		{"a role the owner does not share", several(v1.RoleReadWrite, nil, "a", "payments/orders"),
			[]string{"spec.bucketyRefs[1]", "payments/orders", "ReadWrite"}},
		{"a namespace that shares nothing", several(v1.RoleReadOnly, nil, "a", "payments/private"),
			[]string{"spec.bucketyRefs[1]", "payments/private"}},
		{"buckets with a format that holds one", several(v1.RoleReadWrite, []string{"obc"}, "x", "y"),
			[]string{"spec.secretFormats[0]", "obc", "several Bucketies"}},
		{"buckets with formats that hold several", several(v1.RoleReadWrite, []string{"aws-env", "rclone"}, "x", "y"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.ValidateCreate(context.Background(), c.a)
			if c.want == nil {
				if err != nil {
					t.Fatalf("want admitted, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want refused saying %q, admitted", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("want the refusal to say %q, got %v", w, err)
				}
			}
		})
	}
	// Immutable: the list may not change, nor become one reference.
	old := several(v1.RoleReadOnly, nil, "a", "b")
	for _, next := range []*v1.BucketyAccess{several(v1.RoleReadOnly, nil, "a", "c"), several(v1.RoleReadOnly, nil, "a")} {
		if _, err := v.ValidateUpdate(context.Background(), old, next); err == nil || !strings.Contains(err.Error(), "spec.bucketyRefs: Forbidden: is immutable") {
			t.Errorf("changing spec.bucketyRefs: want refused as immutable, got %v", err)
		}
	}
}

// BenchmarkSeveralAccess measures the admission handler for an access
// naming 128 Bucketies (a tenth of them another namespace's, shared) with
// 1000 Bucketies known to the webhook's cache; it reports p50 and p99.
func BenchmarkSeveralAccess(b *testing.B) {
	var bs []*v1.Buckety
	var refs []string
	for i := range 1000 {
		ns := "app"
		if i%10 == 0 {
			ns = "payments"
		}
		bs = append(bs, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("t%04d", i)}, Spec: v1.BucketySpec{Backend: "other",
			Sharing: []v1.SharingRule{{Namespace: "app", Roles: []v1.Role{v1.RoleReadWrite}}}}})
		if i < 128 {
			refs = append(refs, ns+"/"+bs[i].Name)
		}
	}
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	h := admission.WithValidator[*v1.BucketyAccess](s, AccessValidator{severalValidators(b, bs...)})
	obj := several(v1.RoleReadWrite, []string{"java"}, refs...)
	obj.TypeMeta = metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BucketyAccess"}
	raw, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "x", Operation: admissionv1.Create, Namespace: "app", Name: "multi", Object: runtime.RawExtension{Raw: raw}}}
	admitLatency(b, h, req)
}
