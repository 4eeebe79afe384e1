//go:build unix

package loader

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// dirProblem reports why dir cannot hold compiled code, or "": it must be
// a real directory (not a symbolic link) owned by the effective user with
// no group or other permission bits, the state directory's rule
// (hostfuncs/README.md, mcp_resume_prepare_dir). The answer says how to fix
// it.
func dirProblem(dir string) string {
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Sprintf("cache directory %s: %v", dir, err)
	}
	if info.Mode()&fs.ModeSymlink != 0 || !info.IsDir() {
		return fmt.Sprintf("cache directory %s is not a directory (or is a symbolic link); remove it", dir)
	}
	if uid := owner(info); uid != os.Geteuid() {
		return fmt.Sprintf("cache directory %s is owned by uid %d, not by this user (uid %d); remove it or choose a cache directory of your own", dir, uid, os.Geteuid())
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Sprintf("cache directory %s has mode %04o, which lets other users in; run: chmod 700 %s", dir, perm, dir)
	}
	return ""
}

// ensureDir creates dir and its missing parents with mode 0700, but never
// inside a directory another user (other than root) owns: root running with
// a user's HOME must not leave root-owned directories in it. Then it checks
// dir (dirProblem). It returns why dir is unusable, or "".
func ensureDir(dir string) string {
	var missing []string
	top := dir
	for {
		_, err := os.Lstat(top)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("cache directory %s: %v", top, err)
		}
		missing = append(missing, top)
		parent := filepath.Dir(top)
		if parent == top {
			break
		}
		top = parent
	}
	if len(missing) > 0 {
		info, err := os.Stat(top)
		if err != nil {
			return fmt.Sprintf("cache directory %s: %v", top, err)
		}
		if uid := owner(info); uid != os.Geteuid() && uid != 0 {
			return fmt.Sprintf("%s is owned by uid %d, not by this user (uid %d): not creating the cache directory %s in it; choose a cache directory of your own", top, uid, os.Geteuid(), missing[len(missing)-1])
		}
		for i := len(missing) - 1; i >= 0; i-- {
			if err := os.Mkdir(missing[i], 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Sprintf("cache directory %s: %v", missing[i], err)
			}
		}
	}
	return dirProblem(dir)
}

// treeProblem reports why an entry under root might not be this user's
// code, or "": a symbolic link, or an entry owned by another user (planted
// while the directory was open to others). root itself is checked with
// dirProblem.
func treeProblem(root string) string {
	euid := os.Geteuid()
	var problem string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info() // lstat: WalkDir never follows symlinks
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			problem = fmt.Sprintf("cache entry %s is a symbolic link; remove %s", p, root)
		case owner(info) != euid:
			problem = fmt.Sprintf("cache entry %s is owned by uid %d, not by this user (uid %d); remove %s", p, owner(info), euid, root)
		default:
			return nil
		}
		return filepath.SkipAll
	})
	if err != nil && problem == "" {
		problem = fmt.Sprintf("cache entry %s: %v", root, err)
	}
	return problem
}

// owner is the uid that owns the file info describes (-1 if unknown).
func owner(info fs.FileInfo) int {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
