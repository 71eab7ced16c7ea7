package harness

import (
	"encoding/json"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/kadm"
	"github.com/Yolean/buckety-controller/drivers/s3"
	"github.com/Yolean/buckety-controller/internal/config"
)

// A test's buckety-controller.yaml is built from the config types, never
// written as text: a backend or a config key is added in one place, and a
// key renamed in the product breaks the build of every test that sets it.
// Values may reference variables (${TEST_S3_ACCESS_KEY}): they are
// substituted when the file is loaded, as in production.

// Kadm is a kadm backend with driver config c.
func Kadm(name string, c kadm.Config) config.Backend {
	return backend(name, kadm.Name, c)
}

// S3 is an s3 backend with driver config c.
func S3(name string, c s3.Config) config.Backend {
	return backend(name, s3.Name, c)
}

func backend(name, driver string, c any) config.Backend {
	raw, err := json.Marshal(c)
	if err != nil {
		// The driver config types are plain data: an error is a bug in
		// the type, not in the test.
		panic(fmt.Sprintf("harness: marshal the %s config of backend %s: %v", driver, name, err))
	}
	return config.Backend{Name: name, Driver: driver, Config: raw}
}

// S3Server is the part of an s3 config that names a server: its
// implementation, endpoint and region, path-style addressing, and the keys
// as the variables the controller's environment holds.
func S3Server(implementation, endpoint, region, keyVar, secretVar string) s3.Config {
	return s3.Config{Implementation: implementation, Endpoint: endpoint, Region: region, ForcePathStyle: true,
		AccessKeyID: "${" + keyVar + "}", SecretAccessKey: "${" + secretVar + "}"}
}

// ConfigYAML is buckety-controller.yaml with backends.
func ConfigYAML(backends ...config.Backend) string {
	return InstallationConfigYAML("", backends...)
}

// InstallationConfigYAML is buckety-controller.yaml naming its installation
// (none: the controller derives one from the cluster, which a rebuilt
// cluster does not keep) with backends.
func InstallationConfigYAML(installation string, backends ...config.Backend) string {
	b, err := yaml.Marshal(config.Config{Installation: installation, Backends: backends})
	if err != nil {
		panic(fmt.Sprintf("harness: marshal buckety-controller.yaml: %v", err))
	}
	return string(b)
}

// Tenancy sets the name policy prefix and adoption of b.
func Tenancy(b config.Backend, prefix string, adopt bool) config.Backend {
	if prefix != "" {
		b.NamePolicy = &config.NamePolicy{Prefix: prefix}
	}
	if adopt {
		b.Adoption = &config.Adoption{Allow: true}
	}
	return b
}

// Duration is d as a config duration.
func Duration(d time.Duration) drivers.Duration { return drivers.Duration{Duration: d} }

// OrphanGrace sets credentials.orphanGrace of b to d, keeping the rest of
// its credentials block.
func OrphanGrace(b config.Backend, d time.Duration) config.Backend {
	c := config.Credentials{}
	if b.Credentials != nil {
		c = *b.Credentials
	}
	g := Duration(d)
	c.OrphanGrace = &g
	b.Credentials = &c
	return b
}

// Grace is a backend's credentials block with rotationGrace d.
func Grace(d time.Duration) *config.Credentials {
	g := Duration(d)
	return &config.Credentials{RotationGrace: &g}
}
