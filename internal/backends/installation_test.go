package backends_test

import (
	"context"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/kadm"
	"github.com/Yolean/buckety-controller/internal/backends/backendstest"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestBackendsAreToldTheirInstallation: a Kafka backend writes owner
// records of its own accord (a topic's ID), only records of its
// installation, and knows which those are only when told
// (drivers.InstallationAware). A record of a former name, written before
// a restart, names a topic deleted since; the Buckety's Ensure creates
// the topic again. Told, the backend clears the record's ID before the
// create and gives it the new topic's; untold, it leaves the record naming
// the deleted topic, which refuses the Buckety's own topic after the next
// restart. Both the config's name and one the controller sets later
// (SetInstallation, no installation in the config) are told.
func TestBackendsAreToldTheirInstallation(t *testing.T) {
	broker := kafka.Start(t, kafka.Options{})
	ctx := context.Background()
	seeds := "['" + strings.Join(broker.Addrs, "', '") + "']"
	// The ID of a topic deleted before the test, as kafka-topics prints it.
	const deleted = "3q2-7wECAwQFBgcICQoLDA"
	for _, c := range []struct{ name, yaml, set string }{
		{"from the config", "installation: a\nformerInstallations: [before]\nbackends:\n- {name: kafka, driver: kadm, config: {seedBrokers: " + seeds + "}}\n", ""},
		{"set later", "formerInstallations: [before]\nbackends:\n- {name: kafka, driver: kadm, config: {seedBrokers: " + seeds + "}}\n", "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			topic := "told-" + strings.ReplaceAll(c.name, " ", "-")
			// The process before the restart, under the former name.
			opened, err := kadm.New().Open(ctx, "kafka", &kadm.Config{SeedBrokers: broker.Addrs})
			if err != nil {
				t.Fatal(err)
			}
			before := opened.(*kadm.Backend)
			defer func() {
				if err := before.Close(); err != nil {
					t.Error(err)
				}
			}()
			retained := &drivers.OwnerRecord{Installation: "before", Namespace: "team", Name: topic, UID: "uid", State: drivers.OwnerRetained, ResourceID: deleted}
			if err := before.WriteOwner(ctx, drivers.Resource{Name: topic}, retained); err != nil {
				t.Fatal(err)
			}
			set := backendstest.Open(t, c.yaml)
			if c.set != "" {
				set.SetInstallation(c.set)
			}
			e, _ := set.Get("kafka")
			r := drivers.Resource{Name: topic, Parameters: map[string]string{"partitions": "1"}}
			if _, err := e.Owners.ReadOwner(ctx, r); err != nil {
				t.Fatal(err)
			}
			if res, err := e.Backend.Ensure(ctx, r); err != nil || !res.Created {
				t.Fatalf("Ensure: want the topic created, got %+v %v", res, err)
			}
			rec, err := before.ReadOwner(ctx, r)
			if err != nil || rec == nil {
				t.Fatalf("the record after the create: want it, got %v %v", rec, err)
			}
			if rec.ResourceID == deleted || rec.ResourceID == "" {
				t.Errorf("the record of the former name after the create: want the new topic's ID, got %q", rec.ResourceID)
			}
		})
	}
}
