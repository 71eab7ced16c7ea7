package scale

import (
	"os"
	"testing"

	"github.com/Yolean/buckety-controller/test/harness"
)

// TestMain builds each binary once for the run: the scale and the shards
// rows each ask for the controller and the webhook.
func TestMain(m *testing.M) { os.Exit(harness.RunCachingBuilds(m)) }
