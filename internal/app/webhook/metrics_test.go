package webhook

import (
	"crypto/tls"
	"errors"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/Yolean/buckety-controller/test/pki"
)

var errTest = errors.New("test")

func admissionResponse(allowed bool, s *metav1.Status) admissionv1.AdmissionResponse {
	return admissionv1.AdmissionResponse{Allowed: allowed, Result: s}
}

func TestDecision(t *testing.T) {
	status := func(code int32) *metav1.Status { return &metav1.Status{Code: code} }
	for _, c := range []struct {
		name string
		resp admission.Response
		want string
	}{
		{"allowed", admission.Allowed(""), ResultAllowed},
		{"allowed with warnings", admission.Allowed("").WithWarnings("w"), ResultAllowed},
		{"field errors (422)", admission.Response{AdmissionResponse: admissionResponse(false, status(http.StatusUnprocessableEntity))}, ResultDenied},
		{"denied without a code", admission.Denied("no"), ResultDenied},
		{"forbidden (403)", admission.Response{AdmissionResponse: admissionResponse(false, status(http.StatusForbidden))}, ResultDenied},
		{"undecodable request (400)", admission.Errored(http.StatusBadRequest, errTest), ResultError},
		{"internal error (500)", admission.Errored(http.StatusInternalServerError, errTest), ResultError},
	} {
		if got := decision(c.resp); got != c.want {
			t.Errorf("%s: want %s, got %s", c.name, c.want, got)
		}
	}
}

// TestRecordExpiry: the gauge is the leaf's NotAfter, whether or not the
// key pair carries the parsed leaf.
func TestRecordExpiry(t *testing.T) {
	ca, err := pki.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	for _, validity := range []time.Duration{time.Hour, 90 * 24 * time.Hour} {
		certPEM, keyPEM, err := ca.Issue("buckety-webhook", nil, []string{"localhost"}, nil, validity)
		if err != nil {
			t.Fatal(err)
		}
		kp, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		want := float64(kp.Leaf.NotAfter.Unix())
		kp.Leaf = nil
		if err := recordExpiry(kp); err != nil {
			t.Fatal(err)
		}
		var m dto.Metric
		if err := CertificateExpiry.Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetGauge().GetValue(); got != want {
			t.Errorf("validity %s: want %v, got %v", validity, want, got)
		}
	}
	if err := recordExpiry(tls.Certificate{}); err == nil {
		t.Error("an empty key pair: want an error, got nil")
	}
}
