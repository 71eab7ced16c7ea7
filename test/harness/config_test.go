package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/drivers/kadm"
	"github.com/Yolean/buckety-controller/drivers/s3"
	"github.com/Yolean/buckety-controller/internal/config"
)

// TestConfigYAMLLoads: what the builders write is a file the controller
// loads, with durations, variables and the tenancy fields as written.
func TestConfigYAMLLoads(t *testing.T) {
	k := Tenancy(Kadm("kafka", kadm.Config{SeedBrokers: []string{"127.0.0.1:9092"}, RequestTimeout: drivers.Duration{Duration: 5 * time.Second},
		SASL: &kadm.SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "${KAFKA_PASSWORD}"}}), "$${namespace}.", true)
	k.Defaults = map[string]string{"zone": "local"}
	sc := S3Server(s3.ImplMinIO, "http://127.0.0.1:9000", "us-east-1", "S3_KEY", "S3_SECRET")
	sc.Credentials = &s3.Credentials{}
	y := ConfigYAML(k, S3("s3", sc))
	if strings.Contains(y, "requestTimeout: 0s") || !strings.Contains(y, "requestTimeout: 5s") || !strings.Contains(y, "credentials: {}") {
		t.Fatalf("want requestTimeout 5s on kafka only and empty credentials on s3, got:\n%s", y)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"KAFKA_PASSWORD": "pw", "S3_KEY": "key", "S3_SECRET": "secret"}
	c, err := config.Load(dir, config.Options{Registry: all.Registry(), Lookup: func(v string) (string, bool) { s, ok := env[v]; return s, ok }})
	if err != nil {
		t.Fatalf("load:\n%s\n%v", y, err)
	}
	if len(c.Backends) != 2 || c.Backends[0].NamePolicy == nil || c.Backends[0].NamePolicy.Prefix != "${namespace}." || c.Backends[0].Adoption == nil || !c.Backends[0].Adoption.Allow {
		t.Fatalf("want kafka's name policy ${namespace}. and adoption allowed, got %+v", c.Backends[0])
	}
}

// TestInstallationConfigYAMLLoads: the installation name and a backend's
// orphanGrace are written where the controller reads them.
func TestInstallationConfigYAMLLoads(t *testing.T) {
	k := OrphanGrace(Kadm("kafka", kadm.Config{SeedBrokers: []string{"127.0.0.1:9092"}}), 10*time.Second)
	y := InstallationConfigYAML("scale", k)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(dir, config.Options{Registry: all.Registry()})
	if err != nil {
		t.Fatalf("load:\n%s\n%v", y, err)
	}
	if c.Installation != "scale" {
		t.Fatalf("installation: want scale, got %q in:\n%s", c.Installation, y)
	}
	if got := c.Backends[0].OrphanGrace(); got != 10*time.Second {
		t.Fatalf("orphanGrace: want 10s, got %s in:\n%s", got, y)
	}
	if y0 := ConfigYAML(k); strings.Contains(y0, "installation") {
		t.Fatalf("ConfigYAML: want no installation key, got:\n%s", y0)
	}
}
