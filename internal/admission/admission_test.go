package admission

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/Yolean/buckety-controller/drivers/all"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
)

const testConfig = `backends:
- name: kafka
  driver: kadm
  config: {seedBrokers: ['kafka:9092']}
  defaults: {zone: local}
- name: tenants
  driver: kadm
  service: kafka
  config: {seedBrokers: ['kafka:9092']}
  limits: {perNamespace: 2, accessesPerNamespace: 5, accessesPerBuckety: 3, parameterMax: {partitions: 64}}
  reservedNames: ["*.reserved-*"]
  namePolicy: {prefix: '$${namespace}.'}
  adoption: {allow: true}
- name: s3
  driver: s3
  config: {implementation: minio, endpoint: 'http://minio:9000', accessKeyID: '${AK}', secretAccessKey: '${SK}'}
- name: r2
  driver: s3
  config: {implementation: r2, endpoint: 'https://acct.r2.cloudflarestorage.com', accessKeyID: '${AK}', secretAccessKey: '${SK}'}
`

// webhookConfig loads text as the webhook does: without credentials (AK
// and SK are unset).
func webhookConfig(t testing.TB, text string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, config.Options{Registry: all.Registry(), WithoutCredentials: true, Lookup: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func validators(t testing.TB, objs ...*v1.Buckety) *Validators {
	t.Helper()
	cfg := webhookConfig(t, testConfig)
	known := map[string]*v1.Buckety{}
	for _, b := range objs {
		known[b.Namespace+"/"+b.Name] = b
	}
	v, err := New(cfg, func(_ context.Context, ns, name string) (*v1.Buckety, bool) {
		b, ok := known[ns+"/"+name]
		return b, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func bky(backend, name string, params map[string]string, labels map[string]string) *v1.Buckety {
	return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "tenant1", Labels: labels}, Spec: v1.BucketySpec{Backend: backend, Name: name, Parameters: params}}
}

func withDefaultAccess(b *v1.Buckety, formats ...string) *v1.Buckety {
	b.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "creds", SecretFormats: formats}
	return b
}

func TestBucketyCreate(t *testing.T) {
	v := BucketyValidator{validators(t)}
	cases := []struct {
		name string
		b    *v1.Buckety
		errs []string
		warn string
	}{
		{name: "good", b: bky("kafka", "${namespace}.${name}.v${label['yolean.se/generation']}", map[string]string{"partitions": "3"}, map[string]string{"yolean.se/generation": "003"})},
		{name: "unknown backend lists the available ones", b: bky("kafak", "", nil, nil), errs: []string{`spec.backend: Invalid value: "kafak": no such backend in the controller config; available: "kafka", "tenants", "s3", "r2"`}},
		{name: "missing label", b: bky("kafka", "${namespace}.${name}.v${label['yolean.se/generation']}", nil, nil), errs: []string{`spec.name: Invalid value: "${namespace}.${name}.v${label['yolean.se/generation']}"`, `the Buckety has no label "yolean.se/generation"`}},
		{name: "missing backend default", b: bky("kafka", "${backend.region}-${name}", nil, nil), errs: []string{`backend "kafka" has no defaults.region`}},
		{name: "malformed template", b: bky("kafka", "${nam}", nil, nil), errs: []string{`column 3: unknown reference ${nam}`}},
		{name: "resolved name rejected, and shown", b: bky("s3", "${namespace}_${name}", nil, nil), errs: []string{`resolves to "tenant1_orders", which driver s3 rejects`}},
		{name: "name policy", b: bky("tenants", "other-tenant.orders", nil, nil), errs: []string{`spec.name: Forbidden: resolves to "other-tenant.orders", but backend tenants only allows names starting with ${namespace}. (here "tenant1.")`}},
		{name: "name policy satisfied", b: bky("tenants", "${namespace}.orders", nil, nil)},
		{name: "every bad parameter at once", b: bky("kafka", "", map[string]string{"partitions": "0", "replicationFactor": "x", "config.Bad": "1", "retention": "1"}, nil),
			errs: []string{"spec.parameters[partitions]", "spec.parameters[replicationFactor]", "spec.parameters[config.Bad]", "spec.parameters[retention]"}},
		{name: "jurisdiction on r2", b: bky("r2", "orders", map[string]string{"jurisdiction": "eu"}, nil)},
		{name: "jurisdiction elsewhere names the implementation", b: bky("s3", "orders", map[string]string{"jurisdiction": "eu"}, nil), errs: []string{"jurisdiction is only supported for implementation r2, and the backend's implementation is minio"}},
		{name: "lifecycle outside the subset", b: bky("s3", "orders", map[string]string{"lifecycle": `{"transitions": []}`}, nil), errs: []string{`spec.parameters[lifecycle]`, `unknown field "transitions"`}},
		{name: "unknown config warns", b: bky("kafka", "", map[string]string{"config.redpanda.x": "1"}, nil), warn: `"redpanda.x" is not an Apache Kafka topic config`},
		{name: "default access formats", b: withDefaultAccess(bky("s3", "orders", nil, nil), "aws-env", "obc")},
		{name: "unknown default access format", b: withDefaultAccess(bky("kafka", "", nil, nil), "jaas"),
			errs: []string{`spec.defaultAccess.secretFormats[0]: Unsupported value: "jaas": supported values: "java", "librdkafka"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := v.ValidateCreate(context.Background(), c.b)
			if len(c.errs) == 0 && err != nil {
				t.Fatalf("want admitted, got %v", err)
			}
			if len(c.errs) > 0 && err == nil {
				t.Fatalf("want rejected with %q, got admitted", c.errs)
			}
			for _, e := range c.errs {
				if !strings.Contains(err.Error(), e) {
					t.Errorf("want %q in %v", e, err)
				}
			}
			if c.warn != "" && !strings.Contains(strings.Join(w, "|"), c.warn) {
				t.Errorf("want warning %q, got %q", c.warn, w)
			}
		})
	}
}

func TestBucketyUpdate(t *testing.T) {
	v := BucketyValidator{validators(t)}
	old := bky("kafka", "x", map[string]string{"partitions": "6", "replicationFactor": "3"}, nil)
	cases := []struct {
		name   string
		mutate func(b *v1.Buckety)
		errs   []string
		warn   string
	}{
		{name: "grow partitions", mutate: func(b *v1.Buckety) { b.Spec.Parameters["partitions"] = "12" }},
		{name: "labels only, even ones the template used", mutate: func(b *v1.Buckety) { b.Labels = map[string]string{"a": "b"} }},
		{name: "backend", mutate: func(b *v1.Buckety) { b.Spec.Backend = "s3" }, errs: []string{`spec.backend: Forbidden: is immutable (was "kafka")`}},
		{name: "name", mutate: func(b *v1.Buckety) { b.Spec.Name = "y" }, errs: []string{`spec.name: Forbidden: is immutable (was "x")`}},
		{name: "shrink and rf", mutate: func(b *v1.Buckety) {
			b.Spec.Parameters["partitions"] = "3"
			b.Spec.Parameters["replicationFactor"] = "1"
		}, errs: []string{
			"spec.parameters[partitions]: Forbidden: can only grow (was 6, now 3)", "spec.parameters[replicationFactor]: Forbidden: is immutable after creation (was 3, now 1)"}},
		{name: "deleting, spec unchanged (the finalizer's removal) passes", mutate: func(b *v1.Buckety) {
			now := metav1.Now()
			b.DeletionTimestamp = &now
			b.Finalizers = nil
		}},
		{name: "deleting, an immutable parameter changed is refused", mutate: func(b *v1.Buckety) {
			now := metav1.Now()
			b.DeletionTimestamp = &now
			b.Spec.Parameters["replicationFactor"] = "1"
		}, errs: []string{"spec.parameters[replicationFactor]: Forbidden: is immutable after creation (was 3, now 1)"}},
		{name: "deleting, a mutable parameter changed passes", mutate: func(b *v1.Buckety) {
			now := metav1.Now()
			b.DeletionTimestamp = &now
			b.Spec.Parameters["partitions"] = "12"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := old.DeepCopy()
			c.mutate(b)
			_, err := v.ValidateUpdate(context.Background(), old, b)
			if (err == nil) != (len(c.errs) == 0) {
				t.Fatalf("want errors %q, got %v", c.errs, err)
			}
			for _, e := range c.errs {
				if !strings.Contains(err.Error(), e) {
					t.Errorf("want %q in %v", e, err)
				}
			}
		})
	}
	// A Buckety whose backend left the config can still be updated (its
	// finalizer removed, labels edited), with a warning.
	gone := bky("removed", "x", nil, nil)
	gone.Status.Backend = "removed"
	upd := gone.DeepCopy()
	upd.Labels = map[string]string{"x": "y"}
	w, err := v.ValidateUpdate(context.Background(), gone, upd)
	if err != nil || !strings.Contains(strings.Join(w, "|"), `backend "removed" is not in the controller config`) {
		t.Errorf("want admitted with a warning, got %v %q", err, w)
	}
}

func withFormats(a *v1.BucketyAccess, formats ...string) *v1.BucketyAccess {
	a.Spec.SecretFormats = formats
	return a
}

func TestAccess(t *testing.T) {
	kb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "tenant1"}, Spec: v1.BucketySpec{Backend: "kafka"}}
	sb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "files", Namespace: "tenant1"}, Spec: v1.BucketySpec{Backend: "s3"}}
	v := AccessValidator{validators(t, kb, sb)}
	acc := func(buckety string, role v1.Role, params map[string]string) *v1.BucketyAccess {
		return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "tenant1"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: buckety}, CredentialsSecretName: "a", Role: role, Parameters: params}}
	}
	cases := []struct {
		name string
		a    *v1.BucketyAccess
		errs []string
		warn string
	}{
		{name: "read write", a: acc("orders", v1.RoleReadWrite, nil)},
		{name: "read only warns", a: acc("orders", v1.RoleReadOnly, map[string]string{"consumerGroupPrefix": "tenant1-"}), warn: "role ReadOnly is not enforced"},
		{name: "bad role", a: acc("orders", "Admin", nil), errs: []string{`spec.role: Unsupported value: "Admin"`}},
		{name: "unknown kadm access parameter", a: acc("orders", v1.RoleReadWrite, map[string]string{"group": "x"}), errs: []string{`spec.parameters[group]`}},
		{name: "s3 has no access parameters", a: acc("files", v1.RoleReadWrite, map[string]string{"prefix": "x"}), errs: []string{`spec.parameters[prefix]`}},
		{name: "s3 warns it is not scoped", a: acc("files", v1.RoleReadWrite, nil), warn: "not a key scoped to this bucket"},
		{name: "unknown Buckety is admitted with a warning", a: acc("later", v1.RoleReadOnly, nil), warn: "Buckety later not found (yet)"},
		{name: "kadm secret formats", a: withFormats(acc("orders", v1.RoleReadWrite, nil), "java", "librdkafka")},
		{name: "s3 secret formats", a: withFormats(acc("files", v1.RoleReadWrite, nil), "aws-env", "aws-files", "obc", "rclone")},
		{name: "a format of the other driver", a: withFormats(acc("orders", v1.RoleReadWrite, nil), "java", "aws-env"),
			errs: []string{`spec.secretFormats[1]: Unsupported value: "aws-env": supported values: "java", "librdkafka"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := v.ValidateCreate(context.Background(), c.a)
			if (err == nil) != (len(c.errs) == 0) {
				t.Fatalf("want errors %q, got %v", c.errs, err)
			}
			for _, e := range c.errs {
				if !strings.Contains(err.Error(), e) {
					t.Errorf("want %q in %v", e, err)
				}
			}
			if c.warn != "" && !strings.Contains(strings.Join(w, "|"), c.warn) {
				t.Errorf("want warning %q, got %q", c.warn, w)
			}
		})
	}
	// A format added on update is validated too.
	fmtOld := acc("files", v1.RoleReadWrite, nil)
	if _, err := v.ValidateUpdate(context.Background(), fmtOld, withFormats(fmtOld.DeepCopy(), "s3cmd")); err == nil || !strings.Contains(err.Error(), `spec.secretFormats[0]: Unsupported value: "s3cmd"`) {
		t.Errorf("want an unknown format refused on update, got %v", err)
	}
	old := acc("orders", v1.RoleReadWrite, nil)
	upd := old.DeepCopy()
	upd.Spec.BucketyRef.Name = "files"
	upd.Spec.CredentialsSecretName = "b"
	_, err := v.ValidateUpdate(context.Background(), old, upd)
	for _, e := range []string{`spec.bucketyRef: Forbidden: is immutable (was "orders")`, `spec.credentialsSecretName: Forbidden: is immutable (was "a")`} {
		if err == nil || !strings.Contains(err.Error(), e) {
			t.Errorf("want %q in %v", e, err)
		}
	}
}

func TestBucketyAdoption(t *testing.T) {
	v := BucketyValidator{validators(t)}
	adopt := func(backend string, a v1.Adoption) *v1.Buckety {
		b := bky(backend, "${namespace}.orders", nil, nil)
		b.Spec.Adoption = a
		return b
	}
	const refused = `spec.adoption: Forbidden: Adopt is not allowed on backend "kafka": its configuration in buckety-controller.yaml does not set adoption.allow`
	for _, c := range []struct {
		name     string
		old, new *v1.Buckety
		err      string
	}{
		{name: "create: Adopt where the backend does not allow it", new: adopt("kafka", v1.AdoptionAdopt), err: refused},
		{name: "create: AdoptAndConverge where the backend does not allow it", new: adopt("kafka", v1.AdoptionAndConverge), err: `spec.adoption: Forbidden: AdoptAndConverge is not allowed on backend "kafka"`},
		{name: "create: Refuse is always allowed", new: adopt("kafka", v1.AdoptionRefuse)},
		{name: "create: Adopt where the backend allows it", new: adopt("tenants", v1.AdoptionAdopt)},
		{name: "update: switching to Adopt where the backend does not allow it", old: adopt("kafka", ""), new: adopt("kafka", v1.AdoptionAdopt), err: refused},
		{name: "update: Adopt to AdoptAndConverge where allowed", old: adopt("tenants", v1.AdoptionAdopt), new: adopt("tenants", v1.AdoptionAndConverge)},
		{name: "update: unchanged field is not rechecked (the maintainer withdrew adoption.allow later)", old: adopt("kafka", v1.AdoptionAdopt), new: func() *v1.Buckety {
			b := adopt("kafka", v1.AdoptionAdopt)
			b.Spec.RetentionPolicy = v1.RetentionDelete
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
			switch {
			case c.err == "" && err != nil:
				t.Errorf("want admitted, got %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("want an error containing %q, got %v", c.err, err)
			}
		})
	}
}

// TestParametersWhileAdoptionPending: an adoption waiting for the tenant
// (nothing applied yet) accepts the parameters the resource already has,
// even below what was asked first; once provisioned, the growth-only rule
// holds again.
func TestParametersWhileAdoptionPending(t *testing.T) {
	v := BucketyValidator{validators(t)}
	old := bky("tenants", "${namespace}.orders", map[string]string{"partitions": "3"}, nil)
	old.Spec.Adoption = v1.AdoptionAdopt
	old.Status.Conditions = []metav1.Condition{{Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1.ReasonAdoptionDrift}}
	lowered := old.DeepCopy()
	lowered.Spec.Parameters = map[string]string{"partitions": "2"}
	if _, err := v.ValidateUpdate(context.Background(), old, lowered); err != nil {
		t.Errorf("want lowering admitted while the adoption is pending, got %v", err)
	}
	settled := old.DeepCopy()
	settled.Status.Provenance = v1.ProvenanceAdopted
	settled.Status.Conditions[0].Reason = v1.ReasonReconciled
	if _, err := v.ValidateUpdate(context.Background(), settled, lowered); err == nil || !strings.Contains(err.Error(), "can only grow (was 3, now 2)") {
		t.Errorf("want the growth-only rule once provisioned, got %v", err)
	}
}

// TestHostileBuckety: what a tenant cannot get past admission: parameter
// values beyond the API's bounds, parameters beyond the backend's limits,
// a Buckety beyond the namespace's limit, a reserved name, and a change of
// an immutable parameter after its backend left the config.
func TestHostileBuckety(t *testing.T) {
	v := validators(t)
	counts := map[string]int{"tenant1/tenants": 2, "tenant2/tenants": 1}
	v.WithCounter(func(_ context.Context, ns, backend string) (int, error) { return counts[ns+"/"+backend], nil })
	bv := BucketyValidator{v}
	for _, c := range []struct {
		name string
		b    *v1.Buckety
		ns   string
		err  string
	}{
		{"a value beyond the bound", bky("kafka", "", map[string]string{"config.retention.ms": strings.Repeat("9", v1.MaxParameterValueLength+1)}, nil), "tenant2", "spec.parameters[config.retention.ms]: Too long"},
		{"partitions beyond the backend's limit", bky("tenants", "${namespace}.orders", map[string]string{"partitions": "2147483647"}, nil), "tenant2", "spec.parameters[partitions]: Invalid value: \"2147483647\": backend tenants allows at most 64 (limits.parameterMax.partitions in buckety-controller.yaml)"},
		{"the namespace at its limit", bky("tenants", "${namespace}.orders", nil, nil), "tenant1", "spec.backend: Forbidden: namespace tenant1 already has 2 Bucketies on backend tenants, the most its limits allow (limits.perNamespace: 2 in buckety-controller.yaml)"},
		{"a name the backend reserves", bky("tenants", "${namespace}.reserved-x", nil, nil), "tenant2", "which backend tenants reserves"},
		{"a name the driver reserves", bky("kafka", "_schemas", nil, nil), "tenant2", `resolves to "_schemas", which backend kafka reserves ("_schemas")`},
		// Kafka takes '.' and '_' for the same in topic names: the other
		// spellings would keep the reserved topics from being created.
		{"another spelling of a name the driver reserves", bky("kafka", ".schemas", nil, nil), "tenant2", `resolves to ".schemas", which backend kafka reserves ("_schemas")`},
		{"another spelling of an internal topic", bky("kafka", "_.transaction_state", nil, nil), "tenant2", `collides with "__transaction_state", and names starting with "__" are reserved for Kafka's internal topics`},
		{"a namespace under its limit", bky("tenants", "${namespace}.orders", map[string]string{"partitions": "64"}, nil), "tenant2", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.b.Namespace = c.ns
			_, err := bv.ValidateCreate(context.Background(), c.b)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("want it admitted, got %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("want %q, got %v", c.err, err)
			}
		})
	}

	// The backend left the config: its driver's rules on changes still
	// hold, in every state.
	gone := bky("gone", "orders", map[string]string{"region": "eu-north-1", "versioning": "true"}, nil)
	gone.Status.Backend, gone.Status.Driver = "gone", "s3"
	changed := gone.DeepCopy()
	changed.Spec.Parameters["region"] = "us-east-1"
	now := metav1.Now()
	changed.DeletionTimestamp = &now
	if _, err := bv.ValidateUpdate(context.Background(), gone, changed); err == nil || !strings.Contains(err.Error(), "spec.parameters[region]") {
		t.Errorf("want the immutable region's change refused after the backend left the config, during deletion, got %v", err)
	}
	mutable := gone.DeepCopy()
	mutable.Spec.Parameters["versioning"] = "false"
	if _, err := bv.ValidateUpdate(context.Background(), gone, mutable); err != nil {
		t.Errorf("want a mutable parameter's change admitted, got %v", err)
	}
}

// TestStripBuckety: the webhook's cache keeps of a Buckety only what access
// validation reads, whatever a tenant put in it.
func TestStripBuckety(t *testing.T) {
	major := int64(0)
	b := &v1.Buckety{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "t", UID: "u", Generation: 3,
			Labels: map[string]string{"x": "y"}, Annotations: map[string]string{"big": strings.Repeat("x", 1<<16)}},
		Spec:   v1.BucketySpec{Backend: "kafka", Name: "${name}", Parameters: map[string]string{"config.x": strings.Repeat("y", 4096)}},
		Status: v1.BucketyStatus{Backend: "kafka", Driver: "kadm", DriverMajor: &major, BackendResourceName: "orders", Conditions: []metav1.Condition{{Type: "Ready", Message: strings.Repeat("m", 4096)}}},
	}
	out, err := StripBuckety(b)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1.Buckety)
	if got.Name != "orders" || got.Namespace != "t" || got.UID != "u" || got.Spec.Backend != "kafka" || got.Status.Driver != "kadm" || got.Status.BackendResourceName != "orders" || got.Status.DriverMajor == nil {
		t.Errorf("want identity, spec.backend and the sticky status kept, got %+v", got)
	}
	if got.Labels != nil || got.Annotations != nil || got.Spec.Parameters != nil || got.Spec.Name != "" || got.Status.Conditions != nil {
		t.Errorf("want labels, annotations, parameters, name and conditions dropped, got %+v", got)
	}
}

// TestAccessFlood: a new access beyond its backend's
// limits.accessesPerBuckety or accessesPerNamespace is refused naming
// spec.bucketyRef and the limit; an update of an existing access is not
// counted, and a backend without access limits admits any number.
func TestAccessFlood(t *testing.T) {
	tb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "tenant1"}, Spec: v1.BucketySpec{Backend: "tenants"}}
	kb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "open", Namespace: "tenant1"}, Spec: v1.BucketySpec{Backend: "kafka"}}
	v := validators(t, tb, kb)
	var perBuckety, onBackend int
	v.WithAccessCounter(func(_ context.Context, ns, ref, backend string) (int, int, error) {
		if ns != "tenant1" || backend != "tenants" && backend != "kafka" {
			t.Errorf("counted namespace %s backend %s", ns, backend)
		}
		return perBuckety, onBackend, nil
	})
	av := AccessValidator{v}
	acc := func(ref string) *v1.BucketyAccess {
		return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "tenant1"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: ref}, CredentialsSecretName: "a"}}
	}
	for _, c := range []struct {
		name              string
		ref               string
		perBuckety, total int
		err               string
	}{
		{"under both limits", "orders", 2, 4, ""},
		{"the Buckety at its limit", "orders", 3, 3, "spec.bucketyRef: Forbidden: Buckety orders already has 3 BucketyAccesses, the most backend tenants allows per Buckety (limits.accessesPerBuckety: 3 in buckety-controller.yaml)"},
		{"the namespace at its limit", "orders", 1, 5, "spec.bucketyRef: Forbidden: namespace tenant1 already has 5 BucketyAccesses on backend tenants, the most its limits allow (limits.accessesPerNamespace: 5 in buckety-controller.yaml)"},
		{"a backend without access limits", "open", 1000, 1000, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			perBuckety, onBackend = c.perBuckety, c.total
			_, err := av.ValidateCreate(context.Background(), acc(c.ref))
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("want it admitted, got %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("want %q, got %v", c.err, err)
			}
		})
	}
	// Several Bucketies: the one at its limit is named, wherever it is.
	full := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "full", Namespace: "tenant1"}, Spec: v1.BucketySpec{Backend: "tenants"}}
	v2 := validators(t, tb, full)
	v2.WithAccessCounter(func(_ context.Context, _, ref, _ string) (int, int, error) {
		if ref == RefKey("tenant1", "full") {
			return 3, 3, nil
		}
		return 0, 3, nil
	})
	several := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "tenant1"}, Spec: v1.BucketyAccessSpec{
		BucketyRefs: []v1.BucketyReference{{Name: "orders"}, {Name: "full"}}, CredentialsSecretName: "a"}}
	if _, err := (AccessValidator{v2}).ValidateCreate(context.Background(), several); err == nil || !strings.Contains(err.Error(), "spec.bucketyRefs[1]: Forbidden: Buckety full already has 3 BucketyAccesses") {
		t.Errorf("an access naming a roomy Buckety, then one at its limit: want the second refused by name, got %v", err)
	}
	perBuckety, onBackend = 100, 100
	old := acc("orders")
	upd := old.DeepCopy()
	upd.Spec.Role = v1.RoleReadOnly
	if _, err := av.ValidateUpdate(context.Background(), old, upd); err != nil {
		t.Errorf("an update of an existing access: want it admitted whatever the counts, got %v", err)
	}
}

// TestStripAccess: the webhook's cache keeps of an access only what the
// access limits count.
func TestStripAccess(t *testing.T) {
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "t", UID: "u", Annotations: map[string]string{"big": strings.Repeat("x", 1<<16)}},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "s", Parameters: map[string]string{"x": "y"}}}
	out, err := StripAccess(a)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1.BucketyAccess)
	if got.Name != "a" || got.Namespace != "t" || got.UID != "u" || got.Spec.BucketyRef.Name != "orders" {
		t.Errorf("want identity and spec.bucketyRef kept, got %+v", got)
	}
	if got.Annotations != nil || got.Spec.Parameters != nil || got.Spec.CredentialsSecretName != "" {
		t.Errorf("want annotations, parameters and the Secret name dropped, got %+v", got)
	}
}
