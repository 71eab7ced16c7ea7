package admission

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// nameOf is a metadata.name of n characters.
func nameOf(n int) string { return "n" + strings.Repeat("a", n-1) }

// TestAccessNameLength: an access's name labels its Secret, so a new
// access may have at most 63 characters; the refusal names metadata.name
// and the label. An existing access (created before the check) is still
// admitted on update: its name cannot change.
func TestAccessNameLength(t *testing.T) {
	kb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "tenant1"}, Spec: v1.BucketySpec{Backend: "kafka"}}
	v := AccessValidator{validators(t, kb)}
	acc := func(n int) *v1.BucketyAccess {
		return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: nameOf(n), Namespace: "tenant1"},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "creds"}}
	}
	if _, err := v.ValidateCreate(context.Background(), acc(63)); err != nil {
		t.Errorf("63 characters: want admitted, got %v", err)
	}
	want := `metadata.name: Invalid value: "` + nameOf(64) + `": is 64 characters, more than the 63 a label value holds: buckety labels the access's Secret with the access's name (buckety.yolean.se/access); choose a name of at most 63 characters`
	if _, err := v.ValidateCreate(context.Background(), acc(64)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("64 characters: want %q, got %v", want, err)
	}
	old := acc(64)
	upd := old.DeepCopy()
	upd.Spec.Role = v1.RoleReadOnly
	if _, err := v.ValidateUpdate(context.Background(), old, upd); err != nil {
		t.Errorf("update of an existing 64-character access: want admitted, got %v", err)
	}
}

// TestImplicitAccessNameLength: a Buckety with spec.defaultAccess names its
// implicit access after itself, so its name is bound as an access's is, on
// create and when spec.defaultAccess is added; without spec.defaultAccess
// a Buckety's name is not bound, and one that has it already keeps it.
func TestImplicitAccessNameLength(t *testing.T) {
	v := BucketyValidator{validators(t)}
	const refused = `metadata.name: Invalid value: "%s": is 64 characters, more than the 63 a label value holds: buckety labels the access's Secret with the access's name (buckety.yolean.se/access), and spec.defaultAccess names its BucketyAccess after the Buckety; choose a name of at most 63 characters, or create a BucketyAccess with a shorter name instead of spec.defaultAccess`
	named := func(n int, b *v1.Buckety) *v1.Buckety {
		b.Name = nameOf(n)
		return b
	}
	for _, c := range []struct {
		name     string
		old, new *v1.Buckety
		err      string
	}{
		{name: "create: 63 characters with defaultAccess", new: named(63, withDefaultAccess(bky("kafka", "", nil, nil)))},
		{name: "create: 64 characters with defaultAccess", new: named(64, withDefaultAccess(bky("kafka", "", nil, nil))), err: refused},
		{name: "create: 64 characters without defaultAccess", new: named(64, bky("kafka", "", nil, nil))},
		{name: "update: defaultAccess added to 64 characters", old: named(64, bky("kafka", "", nil, nil)), new: named(64, withDefaultAccess(bky("kafka", "", nil, nil))), err: refused},
		{name: "update: defaultAccess added to 63 characters", old: named(63, bky("kafka", "", nil, nil)), new: named(63, withDefaultAccess(bky("kafka", "", nil, nil)))},
		{name: "update: 64 characters that had defaultAccess already", old: named(64, withDefaultAccess(bky("kafka", "", nil, nil))), new: func() *v1.Buckety {
			b := named(64, withDefaultAccess(bky("kafka", "", nil, nil)))
			b.Labels = map[string]string{"a": "b"}
			b.Spec.DefaultAccess.Role = v1.RoleReadOnly
			return b
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.old == nil {
				_, err = v.ValidateCreate(context.Background(), c.new)
			} else {
				_, err = v.ValidateUpdate(context.Background(), c.old, c.new)
			}
			want := ""
			if c.err != "" {
				want = strings.Replace(c.err, "%s", c.new.Name, 1)
			}
			switch {
			case want == "" && err != nil:
				t.Errorf("want admitted, got %v", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("want %q, got %v", want, err)
			}
		})
	}
}
