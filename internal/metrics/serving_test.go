package metrics

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"
)

// TestSecureOptionsServeTheirCertificate: the options carry a P-256
// certificate for localhost and 127.0.0.1 (no RSA key made when the server
// starts), and a TLS server configured by them completes a handshake.
func TestSecureOptionsServeTheirCertificate(t *testing.T) {
	o, err := SecureOptions("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !o.SecureServing || len(o.TLSOpts) != 1 {
		t.Fatalf("want secure serving with one TLS option, got %+v", o)
	}
	cfg := &tls.Config{}
	o.TLSOpts[0](cfg)
	if cfg.GetCertificate == nil {
		t.Fatal("want GetCertificate set, so controller-runtime makes no certificate of its own")
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	served := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		served <- c.(*tls.Conn).Handshake()
	}()
	conn, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := <-served; err != nil {
		t.Fatalf("server side of the handshake: %v", err)
	}
	leaf := conn.ConnectionState().PeerCertificates[0]
	if _, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Errorf("want an ECDSA key, got %T", leaf.PublicKey)
	}
	if err := leaf.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	if err := leaf.VerifyHostname("localhost"); err != nil {
		t.Error(err)
	}
	if !leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("want a server certificate for 127.0.0.1, got %v %v", leaf.IPAddresses, leaf.ExtKeyUsage)
	}
	if now := time.Now(); now.Before(leaf.NotBefore) || now.Add(364*24*time.Hour).After(leaf.NotAfter) {
		t.Errorf("want valid now and for a year, got %s to %s", leaf.NotBefore, leaf.NotAfter)
	}
}
