//go:build unix

package primitives

import (
	"fmt"
	"os"
	"syscall"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// dirStat is the answer of mcp_resume_prepare_dir "stat" for info (from
// os.Lstat or os.Stat): type, owner uid and st_mode & 07777.
func dirStat(info os.FileInfo) hostfuncs.DirStat {
	st := hostfuncs.DirStat{Type: hostfuncs.StatOther}
	switch {
	case info.Mode()&os.ModeSymlink != 0:
		st.Type = hostfuncs.StatSymlink
	case info.IsDir():
		st.Type = hostfuncs.StatDir
	case info.Mode().IsRegular():
		st.Type = hostfuncs.StatFile
	}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.UID, st.Mode = int(sys.Uid), int(sys.Mode&0o7777)
	}
	return st
}

// checkRegular refuses anything but a regular file (a FIFO, device or
// directory planted at a token path).
func checkRegular(f *os.File, name string) *hostfuncs.Error {
	info, err := f.Stat()
	if err != nil {
		return osError("inspect "+name, err, false)
	}
	if !info.Mode().IsRegular() {
		return &hostfuncs.Error{Code: hostfuncs.CodeUnsafe, Message: fmt.Sprintf("%s is not a regular file (mode %s)", name, info.Mode())}
	}
	return nil
}

// flock takes an exclusive, non-blocking advisory lock on f, released when f
// is closed (by Close or by the process exiting).
func flock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
