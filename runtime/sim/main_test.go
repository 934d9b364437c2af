package sim

import (
	"testing"

	"go.uber.org/goleak"
)

// Every engine a test opens must stop its scheduling loop on Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
