package integration

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestSharedSASLCredentialsAreNotScoped: against a real SASL broker, a
// backend that shares its credentials writes them into the access Secret
// with the connection keys, and the ReadWrite access that receives them
// reports ScopingNotImplemented instead of claiming to be scoped; without
// the opt-in, on a cluster without an authorizer, the Secret carries no
// credentials and the access reports ScopingNotImplemented naming why
// (TestScopedKafkaAccesses covers a cluster with one).
func TestSharedSASLCredentialsAreNotScoped(t *testing.T) {
	needInfra(t)
	broker := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-256:buckety:s3cr3t"}})
	for _, tc := range []struct {
		share    bool
		wantKeys []string
		scoped   metav1.ConditionStatus
	}{
		{false, []string{"bootstrap", "sasl.mechanism", "security.protocol", "topic"}, metav1.ConditionTrue},
		{true, []string{"bootstrap", "sasl.mechanism", "sasl.password", "sasl.username", "security.protocol", "topic"}, metav1.ConditionTrue},
	} {
		t.Run(fmt.Sprintf("shareCredentials %v", tc.share), func(t *testing.T) {
			startController(t, harness.ConfigYAML(harness.Kadm("kafka", kadmdriver.Config{SeedBrokers: []string{broker.Bootstrap()}, RequestTimeout: harness.Duration(5 * time.Second),
				SASL: &kadmdriver.SASL{Mechanism: "SCRAM-SHA-256", Username: "buckety", Password: "s3cr3t"}, ShareCredentials: tc.share})), nil, time.Hour)
			ns := namespace(t)
			b := &v1.Buckety{
				ObjectMeta: metav1.ObjectMeta{Name: "secured", Namespace: ns},
				Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.secured",
					DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "secured-topic"}},
			}
			create(t, b)
			waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, v1.ReasonReconciled, waitTimeout)
			access := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "secured", Namespace: ns}}
			waitCondition(t, access, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if access.Spec.Role != v1.RoleReadWrite {
				t.Fatalf("want the implicit ReadWrite access, got role %s", access.Spec.Role)
			}
			c := waitCondition(t, access, v1.ConditionScopingNotImplemented, tc.scoped, v1.ReasonCredentialsNotScoped, waitTimeout)
			why := "no authorizer"
			if tc.share {
				why = "shareCredentials"
			}
			if !strings.Contains(c.Message, why) {
				t.Errorf("want ScopingNotImplemented to say why (%s), got %q", why, c.Message)
			}
			s := secret(t, ns, "secured-topic")
			var keys []string
			for k := range s.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if !reflect.DeepEqual(keys, tc.wantKeys) {
				t.Errorf("want Secret keys %v, got %v", tc.wantKeys, keys)
			}
			if got := string(s.Data["security.protocol"]); got != "SASL_PLAINTEXT" {
				t.Errorf("want security.protocol SASL_PLAINTEXT, got %q", got)
			}
			if tc.share && (string(s.Data["sasl.username"]) != "buckety" || string(s.Data["sasl.password"]) != "s3cr3t") {
				t.Errorf("want the backend's credentials shared, got %q/%q", s.Data["sasl.username"], s.Data["sasl.password"])
			}
		})
	}
}
