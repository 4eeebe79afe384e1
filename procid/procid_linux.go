//go:build linux

package procid

// newSource returns the Linux process source, reading /proc, once /proc is
// verified to be this PID namespace's.
func newSource() (source, error) {
	r := &linuxReader{root: "/proc"}
	if err := r.checkOwnProc(); err != nil {
		return nil, err
	}
	return r, nil
}
