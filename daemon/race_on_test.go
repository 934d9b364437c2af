//go:build race

package daemon_test

// raceEnabled builds the binaries under test with the race detector too.
const raceEnabled = true
