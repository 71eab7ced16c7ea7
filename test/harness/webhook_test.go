package harness_test

import (
	"strings"
	"testing"

	appwebhook "github.com/Yolean/buckety-controller/internal/app/webhook"
	"github.com/Yolean/buckety-controller/test/harness"
)

// TestDeployedWebhooks: Register builds its configuration from the deploy
// YAML, so that file must decode strictly, name both of buckety-webhook's
// paths, and carry the spec-changed match condition on each webhook.
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
		path, ok := want[h.Name]
		if !ok {
			t.Errorf("want webhooks %v, got %s", want, h.Name)
			continue
		}
		if s := h.ClientConfig.Service; s == nil || s.Path == nil || *s.Path != path {
			t.Errorf("%s: want service path %s, got %+v", h.Name, path, h.ClientConfig)
		}
		if len(h.MatchConditions) != 1 || h.MatchConditions[0].Name != "spec-changed" || !strings.Contains(h.MatchConditions[0].Expression, "object.spec != oldObject.spec") {
			t.Errorf("%s: want the spec-changed match condition, got %+v", h.Name, h.MatchConditions)
		}
		if h.FailurePolicy == nil || *h.FailurePolicy != "Fail" {
			t.Errorf("%s: want failurePolicy Fail, got %v", h.Name, h.FailurePolicy)
		}
	}
}
