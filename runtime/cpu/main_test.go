package cpu

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: Close
// must stop the scheduler and the thread pool.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
