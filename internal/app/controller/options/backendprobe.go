package options

import (
	"fmt"
	"time"
)

// DefaultBackendProbeInterval is how often the leader probes each backend
// (backendview.View): a backend that stops answering shows as Ready False,
// and buckety_backend_up 0, within about this long.
const DefaultBackendProbeInterval = 30 * time.Second

// minBackendProbe keeps a typo from probing in a hot loop.
const minBackendProbe = time.Second

// validateBackendProbe checks --backend-probe-interval.
func (f *Flags) validateBackendProbe() error {
	if f.BackendProbe != 0 && f.BackendProbe < minBackendProbe {
		return fmt.Errorf("--backend-probe-interval %s: want 0 (no probe, no BucketyBackend objects) or at least %s", f.BackendProbe, minBackendProbe)
	}
	return nil
}
