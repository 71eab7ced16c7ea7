package kafka

import (
	"fmt"
	"time"
)

// Fault injection for the fault harness (test/faults): the broker is
// paused, killed and restarted by PID, on the same ports and data dir.

// Pause stops the broker with SIGSTOP: connections stay open, nothing
// answers.
func (b *Broker) Pause() error {
	if b.p == nil {
		return fmt.Errorf("pause: the broker is not running")
	}
	return b.p.Pause()
}

// Resume continues a paused broker.
func (b *Broker) Resume() error {
	if b.p == nil {
		return fmt.Errorf("resume: the broker is not running")
	}
	return b.p.Resume()
}

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
