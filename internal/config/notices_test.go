package config_test

import (
	"strings"
	"testing"
)

// TestNoticesCredentialsMode: the loader returns, per backend and in file
// order, the credentials mode each driver inferred because the file does
// not state it, and nothing for a backend that states it; a mode the
// drivers do not know is refused with its path.
func TestNoticesCredentialsMode(t *testing.T) {
	c, err := loadForWebhook(t, `
backends:
- name: kafka
  driver: kadm
  service: kafka
  config:
    seedBrokers: [kafka:9092]
    sasl: {mechanism: SCRAM-SHA-512, username: buckety, password: "${KAFKA_PASSWORD}"}
- name: kafka-shared
  driver: kadm
  service: kafka
  config:
    seedBrokers: [kafka:9092]
    sasl: {mechanism: SCRAM-SHA-512, username: buckety, password: "${KAFKA_PASSWORD}"}
    shareCredentials: true
- name: kafka-stated
  driver: kadm
  service: kafka
  config:
    seedBrokers: [kafka:9092]
    sasl: {mechanism: SCRAM-SHA-512, username: buckety, password: "${KAFKA_PASSWORD}"}
    credentials: {mode: PerAccess}
- name: blobs
  driver: s3
  service: minio
  config:
    endpoint: http://minio:9000
    accessKeyID: "${S3_ACCESS_KEY_ID}"
    secretAccessKey: "${S3_SECRET_ACCESS_KEY}"
- name: blobs-keys
  driver: s3
  service: minio
  config:
    implementation: minio
    endpoint: http://minio:9000
    accessKeyID: "${S3_ACCESS_KEY_ID}"
    secretAccessKey: "${S3_SECRET_ACCESS_KEY}"
    credentials: {}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"backend kafka: credentials.mode is not set; PerAccess, as before (sasl without shareCredentials): set credentials.mode: PerAccess to say so",
		"backend kafka-shared: credentials.mode is not set; Shared, as before (shareCredentials: true): set credentials.mode: Shared to say so",
		"backend blobs: credentials.mode is not set; Shared, as before (no credentials block): set credentials.mode: Shared to say so",
		"backend blobs-keys: credentials.mode is not set; PerAccess, as before (a credentials block): set credentials.mode: PerAccess to say so",
	}
	if got := c.Notices(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Notices():\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, err = loadForWebhook(t, "backends:\n- {name: blobs, driver: s3, config: {endpoint: 'http://minio:9000', accessKeyID: k, secretAccessKey: s, credentials: {mode: Scoped}}}\n")
	if err == nil || !strings.Contains(err.Error(), `backends[0].config.credentials.mode: Unsupported value: "Scoped": supported values: "PerAccess", "Shared"`) {
		t.Errorf("want the unknown mode refused with its path, got %v", err)
	}
}
