package integration

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// shapesHold checks that every shape of a Secret holds the user and
// password of its default keys.
func shapesHold(data map[string][]byte) string {
	user, pass := string(data["sasl.username"]), string(data["sasl.password"])
	var bad []string
	if c, ok := data[kadmdriver.SecretLibrdkafkaConfig]; ok {
		if !strings.Contains(string(c), "\nsasl.username="+user+"\n") || !strings.Contains(string(c), "\nsasl.password="+pass+"\n") {
			bad = append(bad, "librdkafka.config")
		}
	}
	if c, ok := data[kadmdriver.SecretJAASConfig]; ok && !strings.Contains(string(c), fmt.Sprintf(`username="%s" password="%s";`, user, pass)) {
		bad = append(bad, "sasl.jaas.config")
	}
	if c, ok := data[kadmdriver.SecretClientProperties]; ok && !strings.Contains(string(c), fmt.Sprintf(`username="%s" password="%s";`, user, pass)) {
		bad = append(bad, "client.properties")
	}
	return strings.Join(bad, ", ")
}

// TestSecretFormats: on a scoped broker, an access's secretFormats add
// their keys to the Secret beside the default keys, a rotation rewrites
// every shape with the new user in the same Secret write, removing a
// format removes its keys, and a Buckety's defaultAccess.secretFormats
// reach its implicit access.
func TestSecretFormats(t *testing.T) {
	needInfra(t)
	_, cfg := scopedBroker(t, 2*time.Second)
	startController(t, cfg, nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ticks", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".ticks",
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "implicit"}}}
	create(t, b)
	implicit := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "ticks", Namespace: ns}}
	waitCondition(t, implicit, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if _, ok := secret(t, ns, "implicit").Data[kadmdriver.SecretClientProperties]; ok {
		t.Fatal("a Secret without secretFormats has client.properties")
	}
	patch(t, b, `{"spec":{"defaultAccess":{"secretFormats":["java"]}}}`)
	wait.For(t, waitTimeout, "the implicit access's Secret with the java format", func() (bool, string) {
		d := secret(t, ns, "implicit").Data
		_, ok := d[kadmdriver.SecretClientProperties]
		return ok && shapesHold(d) == "", strings.Join(slices.Sorted(maps.Keys(d)), ",")
	})

	// An explicit access replaces the implicit one; it asks for both.
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ticks"},
		CredentialsSecretName: "app", SecretFormats: []string{"librdkafka", "java"}}}
	create(t, a)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	first := secret(t, ns, "app").Data
	want := []string{"bootstrap", "bootstrap.servers", "client.properties", "group.id.prefix", "librdkafka.config", "sasl.jaas.config", "sasl.mechanism", "sasl.password", "sasl.username", "security.protocol", "topic"}
	if got := slices.Sorted(maps.Keys(first)); !slices.Equal(got, want) {
		t.Errorf("Secret keys %v, want %v", got, want)
	}
	if bad := shapesHold(first); bad != "" {
		t.Errorf("shapes that do not hold the Secret's user: %s", bad)
	}
	if err := produceWith(t, first, ns+".ticks"); err != nil {
		t.Errorf("the Secret's user: %v", err)
	}

	// Rotation: every read of the Secret shows all shapes on one user.
	patch(t, a, `{"spec":{"rotation":"r1"}}`)
	wait.For(t, waitTimeout, "a new user in every shape", func() (bool, string) {
		d := secret(t, ns, "app").Data
		if bad := shapesHold(d); bad != "" {
			t.Fatalf("a Secret whose shapes disagree with its user %s: %s", d["sasl.username"], bad)
		}
		return string(d["sasl.username"]) != string(first["sasl.username"]), string(d["sasl.username"])
	})

	// Removing a format removes its keys, and only those.
	patch(t, a, `{"spec":{"secretFormats":["java"]}}`)
	wait.For(t, waitTimeout, "librdkafka.config removed", func() (bool, string) {
		d := secret(t, ns, "app").Data
		_, gone := d[kadmdriver.SecretLibrdkafkaConfig]
		_, kept := d[kadmdriver.SecretClientProperties]
		return !gone && kept, strings.Join(slices.Sorted(maps.Keys(d)), ",")
	})
}
