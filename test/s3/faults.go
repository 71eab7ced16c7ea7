package s3

import "fmt"

// Fault injection for the fault harness (test/faults): the server is
// killed and restarted by PID, on the same port, data and credentials.

// Kill crashes the server with SIGKILL.
func (s *Server) Kill() error {
	if s.weed != nil {
		return s.weed.Kill()
	}
	if s.p == nil {
		return fmt.Errorf("kill: %s is not running", s.Implementation)
	}
	return s.p.Kill()
}

// Respawn starts a killed server again with the same arguments and waits
// until it serves (SeaweedFS: until it takes writes, about 17 s).
func (s *Server) Respawn() error {
	if s.weed != nil {
		return s.weed.Restart()
	}
	if s.p == nil {
		return fmt.Errorf("respawn: %s was stopped, not killed", s.Implementation)
	}
	np, err := s.p.Respawn()
	if err != nil {
		return err
	}
	s.p = np
	return s.waitReady()
}
