package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Admission results, the result label of AdmissionRequests.
const (
	// ResultAllowed: the object was admitted (perhaps with warnings).
	ResultAllowed = "allowed"
	// ResultDenied: the object was rejected (the validators' field errors).
	ResultDenied = "denied"
	// ResultError: the webhook could not decide: a request it could not
	// decode (HTTP 400) or an internal error (5xx). The API server refuses
	// the request (failurePolicy: Fail).
	ResultError = "error"
)

var (
	// AdmissionRequests counts admission decisions by kind, operation and
	// result. controller-runtime's controller_runtime_webhook_requests_total
	// cannot tell them apart: a rejection is an HTTP 200 response whose
	// AdmissionReview says allowed: false.
	AdmissionRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_admission_requests_total",
		Help: "Admission requests answered by buckety-webhook, by kind, operation and result (allowed, denied, error).",
	}, []string{"kind", "operation", "result"})

	// CertificateExpiry is the NotAfter of the serving certificate the
	// webhook has loaded, set at start and on every reload, so an alert sees
	// a renewal that was issued but never reached the webhook.
	CertificateExpiry = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "buckety_webhook_certificate_expiration_timestamp_seconds",
		Help: "Unix time at which the serving certificate buckety-webhook has loaded expires (its NotAfter).",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(AdmissionRequests, CertificateExpiry)
	// Every series exists from the start, so rate() and ratios over them
	// work before the first request of each kind.
	for _, kind := range []string{"Buckety", "BucketyAccess"} {
		for _, op := range []string{"CREATE", "UPDATE"} {
			for _, r := range []string{ResultAllowed, ResultDenied, ResultError} {
				AdmissionRequests.WithLabelValues(kind, op, r)
			}
		}
	}
}

// counted wraps an admission handler to count its decisions under kind.
func counted(kind string, next admission.Handler) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		resp := next.Handle(ctx, req)
		AdmissionRequests.WithLabelValues(kind, string(req.Operation), decision(resp)).Inc()
		return resp
	})
}

// decision is the result label of a response.
func decision(r admission.Response) string {
	switch {
	case r.Allowed:
		return ResultAllowed
	case r.Result != nil && (r.Result.Code == http.StatusBadRequest || r.Result.Code >= 500):
		return ResultError
	}
	return ResultDenied
}

var errNoCertificate = errors.New("the key pair holds no certificate")

// recordExpiry sets CertificateExpiry from the leaf of a loaded
// certificate; a certificate that does not parse leaves it unchanged (the
// TLS handshake would fail on it anyway).
func recordExpiry(c tls.Certificate) error {
	leaf := c.Leaf
	if leaf == nil {
		if len(c.Certificate) == 0 {
			return errNoCertificate
		}
		var err error
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return err
		}
	}
	CertificateExpiry.Set(float64(leaf.NotAfter.Unix()))
	return nil
}
