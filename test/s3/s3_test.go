package s3

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/test/proc"
)

// TestStartsAgainWhenAPortIsTaken: a server whose port another listener
// took between FreePorts and its bind exits ("Specified port is already in
// use"); Start starts it again on new ports (a CI run failed on one).
func TestStartsAgainWhenAPortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	calls := 0
	freePorts = func(n int) ([]int, error) {
		calls++
		ports, err := proc.FreePorts(n)
		if err == nil && calls == 1 {
			ports[0] = taken.Addr().(*net.TCPAddr).Port
		}
		return ports, err
	}
	t.Cleanup(func() { freePorts = proc.FreePorts })
	s := Start(t, "minio", Options{})
	if calls != 2 {
		t.Fatalf("ports picked %d times, want 2 (the first set had a taken port)", calls)
	}
	if !strings.Contains(s.p.Tail(100), "already in use") {
		t.Errorf("the first MinIO did not report its port taken; log:\n%s", s.p.Tail(100))
	}
	resp, err := http.Get(s.Endpoint + minioHealth)
	if err != nil {
		t.Fatalf("the server started again does not answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the server started again answers %s with %d", minioHealth, resp.StatusCode)
	}
}
