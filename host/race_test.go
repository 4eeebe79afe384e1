//go:build race

package host_test

// raceEnabled: this test binary runs under the race detector.
const raceEnabled = true
