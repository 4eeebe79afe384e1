//go:build !linux && !darwin

package procid

import (
	"fmt"
	"runtime"
)

// newSource fails: only Linux and macOS are supported (spec 000, "Platform
// Support").
func newSource() (source, error) {
	return nil, fmt.Errorf("procid: %s has no supported way to identify the MCP host process, so session resume is off: %w", runtime.GOOS, ErrUnsupported)
}
