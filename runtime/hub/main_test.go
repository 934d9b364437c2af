package hub

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: a
// download, finished, failed or cancelled, must leave no reader or
// connection behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
