package metrics

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// SecureOptions serves metrics at addr over HTTPS behind filter, with a
// self-signed ECDSA certificate made here. controller-runtime would make
// its own when the server starts, from two RSA-2048 keys: seconds of CPU on
// a busy node, during which the process reports ready and /metrics refuses
// connections. A P-256 key takes microseconds. Scrapers of a self-signed
// endpoint skip verification (kube-controller-manager serves the same way).
func SecureOptions(addr string, filter func(*rest.Config, *http.Client) (metricsserver.Filter, error)) (metricsserver.Options, error) {
	cert, err := selfSigned(time.Now())
	if err != nil {
		return metricsserver.Options{}, fmt.Errorf("metrics: self-signed certificate: %w", err)
	}
	return metricsserver.Options{
		BindAddress: addr, SecureServing: true, FilterProvider: filter,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil }
		}},
	}, nil
}

// selfSigned is a certificate for localhost and 127.0.0.1, valid a year
// from an hour before now (clock skew).
func selfSigned(now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
