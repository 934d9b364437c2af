package loadgen

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: a
// finished or cancelled run must leave no sender behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
