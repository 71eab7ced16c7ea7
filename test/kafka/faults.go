package kafka

import (
	"fmt"
	"time"
)

// Fault injection for the fault harness (test/faults): the broker is
// paused, killed and restarted by PID, on the same ports and data dir.

// Kill crashes the broker with SIGKILL.
func (b *Broker) Kill() error {
	if b.p == nil {
		return nil
	}
	err := b.p.Kill()
	b.p = nil
	return err
}

// StartAgain starts a killed or stopped broker on the same ports and data
// dir, waiting until it listens.
func (b *Broker) StartAgain() error {
	if b.p != nil {
		return fmt.Errorf("start again: the broker still runs")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		// The old listeners may take a moment to release the ports.
		err := b.start()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
