package harness_test

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appwebhook "github.com/Yolean/buckety-controller/internal/app/webhook"
	"github.com/Yolean/buckety-controller/internal/shard"
	"github.com/Yolean/buckety-controller/test/harness"
)

// TestDeployedWebhooks: Register builds its configuration from the deploy
// YAML, so that file must decode strictly, name both of buckety-webhook's
// paths, and carry the spec-or-slot-changed match condition on each
// webhook, which calls it for a CREATE only without buckety's stamp (the
// finalizer and slot label, spelt as the code spells them).
func TestDeployedWebhooks(t *testing.T) {
	hooks, err := harness.DeployedWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"bucketies.buckety.yolean.se":       appwebhook.PathBuckety,
		"bucketyaccesses.buckety.yolean.se": appwebhook.PathAccess,
	}
	if len(hooks) != len(want) {
		t.Fatalf("want %d webhooks, got %d", len(want), len(hooks))
	}
	for _, h := range hooks {
		if !servesPath(t, want, h.Name, h.ClientConfig) {
			continue
		}
		if len(h.MatchConditions) != 1 || h.MatchConditions[0].Name != "spec-or-slot-changed" || !strings.Contains(h.MatchConditions[0].Expression, "object.spec != oldObject.spec") || !strings.Contains(h.MatchConditions[0].Expression, shard.SlotLabel) {
			t.Errorf("%s: want the spec-or-slot-changed match condition, got %+v", h.Name, h.MatchConditions)
		} else if e := h.MatchConditions[0].Expression; !strings.HasPrefix(e, "request.operation == 'CREATE' ? !(") || !strings.Contains(e, "f == '"+v1.Finalizer+"'") || !strings.Contains(e, "'"+shard.SlotLabel+"' in object.metadata.labels) :") {
			t.Errorf("%s: want a CREATE matched only without %s and %s, got %s", h.Name, v1.Finalizer, shard.SlotLabel, e)
		}
		if h.FailurePolicy == nil || *h.FailurePolicy != "Fail" {
			t.Errorf("%s: want failurePolicy Fail, got %v", h.Name, h.FailurePolicy)
		}
	}
}

// TestDeployedStamps: the deployed MutatingWebhookConfiguration decodes
// strictly, names both stamp paths under the validating webhooks' names
// (a refusal names the same webhook whichever phase refused), is called
// for every CREATE (no match condition: a stamp a manifest carries must
// not skip the verdict) and only CREATE, and again when another mutating
// webhook changed the object after it.
func TestDeployedStamps(t *testing.T) {
	stamps, err := harness.DeployedStamps()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"bucketies.buckety.yolean.se":       appwebhook.PathAdmitBuckety,
		"bucketyaccesses.buckety.yolean.se": appwebhook.PathAdmitAccess,
	}
	if len(stamps) != len(want) {
		t.Fatalf("want %d webhooks, got %d", len(want), len(stamps))
	}
	for _, h := range stamps {
		if !servesPath(t, want, h.Name, h.ClientConfig) {
			continue
		}
		if len(h.Rules) != 1 || len(h.Rules[0].Operations) != 1 || h.Rules[0].Operations[0] != "CREATE" {
			t.Errorf("%s: want one rule, for CREATE only, got %+v", h.Name, h.Rules)
		}
		if h.SideEffects == nil || *h.SideEffects != "None" {
			t.Errorf("%s: want sideEffects None (dry runs are stamped too), got %v", h.Name, h.SideEffects)
		}
		if len(h.MatchConditions) != 0 {
			t.Errorf("%s: want no match condition, got %+v", h.Name, h.MatchConditions)
		}
		if h.ReinvocationPolicy == nil || *h.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
			t.Errorf("%s: want reinvocationPolicy IfNeeded, got %v", h.Name, h.ReinvocationPolicy)
		}
		if h.FailurePolicy == nil || *h.FailurePolicy != "Fail" {
			t.Errorf("%s: want failurePolicy Fail, got %v", h.Name, h.FailurePolicy)
		}
	}
}

// servesPath checks that the webhook named name is one of want and that its
// client config calls want's path for it; false when name is not in want.
func servesPath(t *testing.T, want map[string]string, name string, cc admissionregistrationv1.WebhookClientConfig) bool {
	t.Helper()
	path, ok := want[name]
	if !ok {
		t.Errorf("want webhooks %v, got %s", want, name)
		return false
	}
	if s := cc.Service; s == nil || s.Path == nil || *s.Path != path {
		t.Errorf("%s: want service path %s, got %+v", name, path, cc)
	}
	return true
}
