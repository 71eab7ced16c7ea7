package retry

import (
	"math/rand/v2"
	"time"
)

// Jitter returns d plus up to 10% random, so periodic re-checks of many
// resources do not line up.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d + time.Duration(rand.Int64N(int64(d)/10+1))
}
