//go:build linux

package procid

// newSource returns the Linux process source, reading /proc.
func newSource() (source, error) {
	return &linuxReader{root: "/proc"}, nil
}
