package seaweedfs

import "fmt"

// Fault injection for the fault harness (test/faults): the server is
// killed by PID and started again with Restart, on the same ports, data
// and keys.

// Kill crashes the server with SIGKILL (its process group) and waits until
// it has exited. Restart starts it again: its Stop is a no-op on a killed
// server, and removes the gRPC sockets the crash left in /tmp.
func (s *Server) Kill() error {
	if s.p == nil {
		return fmt.Errorf("kill: seaweedfs is not running")
	}
	return s.p.Kill()
}
