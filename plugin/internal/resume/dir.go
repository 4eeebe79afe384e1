package resume

import (
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// This file holds the rules about the state directory: when it may be
// created, what makes it usable, and how every failure is worded. Hosts only
// answer the primitives of mcp_resume_prepare_dir ("stat", "mkdir",
// hostfuncs/README.md) with a precise error code, so the verdict and its
// words are the same in every host language.

// modeSticky is the sticky bit of DirStat.Mode (S_ISVTX).
const modeSticky = 0o1000

// prepareDir makes the state directory usable (spec 000, MCP Server Startup step 2, and Security Considerations).
//
// With create it creates a missing directory and its missing parents (mode
// 0700, one "mkdir" each), but only when the deepest existing ancestor may
// hold a directory of this user: it is owned by the effective uid, or it is
// a shared directory owned by root with the sticky bit (/tmp). A server run
// as root with another user's HOME (sudo -E) therefore creates nothing in
// that user's home, where root-owned directories would lock the user out of
// ~/.local. Without create a missing directory reports found false and no
// error (list and prune never create it).
//
// The directory itself must then be a real directory (not a symbolic link,
// dangling or not), owned by the effective uid, with no group or other
// permission bits. Every refusal and failure is a *hostfuncs.Error whose code and
// message come from here alone: CodeUnsafe for a file, a link, another
// owner, a loose mode or a parent that is not this user's; the host's
// CodePermission, CodeNoSpace, CodeReadOnly, CodeNotDir and CodeIO for
// failures of the primitives, worded per code.
func (s *Store) prepareDir(create bool) (found bool, werr *hostfuncs.Error) {
	dir, euid := s.cfg.StateDir, s.facts.EUID
	st, werr := s.dirStat(dir, false)
	switch {
	case werr == nil:
	case werr.Code == hostfuncs.CodeNotFound && !create:
		return false, nil
	case werr.Code == hostfuncs.CodeNotFound || werr.Code == hostfuncs.CodeNotDir && create:
		// Not there, or a parent is not a directory: createDir finds out
		// which ancestor exists and whether a directory may go there.
		if werr := s.createDir(dir, euid); werr != nil {
			return false, werr
		}
		if st, werr = s.dirStat(dir, false); werr != nil {
			return false, dirFailure("inspect", dir, werr)
		}
	default:
		return false, dirFailure("inspect", dir, werr)
	}
	if werr := judgeDir(dir, st, euid); werr != nil {
		return false, werr
	}
	if werr := s.judgeParents(dir, s.cfg.StateRoot); werr != nil {
		return false, werr
	}
	return true, nil
}

// judgeParents is the verdict on the directories that hold dir, from its
// parent up to the state root root (inclusive; none when root is "" or not
// an ancestor of dir): none may let a group or other users write in it
// unless it has the sticky bit (/tmp, 1777), since whoever may write in a
// directory without the sticky bit may rename the app's directory away
// and put their own in its place. Directories above the state root are
// the user's choice and are judged only when one is created (createDir).
// A root reached through a symbolic link is judged where it leads.
func (s *Store) judgeParents(dir, root string) *hostfuncs.Error {
	if root == "" || !strings.HasPrefix(dir, root+"/") && root != "/" {
		return nil
	}
	for p := parentDir(dir); ; p = parentDir(p) {
		st, werr := s.dirStat(p, p == root)
		if werr != nil {
			return dirFailure("inspect", p, werr)
		}
		if st.Mode&0o022 != 0 && st.Mode&modeSticky == 0 {
			what := "the state root "
			if p != root {
				what = "the directory "
			}
			return &hostfuncs.Error{Code: hostfuncs.CodeUnsafe, Message: "state directory " + dir + " is inside " + what + p + ", which has mode " + mode4(st.Mode&0o7777) +
				": other users may write in it without the sticky bit, so they could rename " + dir + " away and put their own in its place; run: chmod go-w " + p}
		}
		if p == root || p == "/" {
			return nil
		}
	}
}

// createDir creates the missing dir and its missing parents, each with
// "mkdir" (mode 0700), after checking that the deepest existing ancestor may
// hold this user's directories (see prepareDir). A directory that appears
// meanwhile (another server of this user creating it) is accepted only if it
// is a directory owned by euid.
func (s *Store) createDir(dir string, euid int) *hostfuncs.Error {
	missing := []string{dir}
	anc := parentDir(dir)
	var st hostfuncs.DirStat
	for {
		var werr *hostfuncs.Error
		st, werr = s.dirStat(anc, true)
		if werr == nil {
			break
		}
		if werr.Code != hostfuncs.CodeNotFound && werr.Code != hostfuncs.CodeNotDir || anc == "/" {
			return dirFailure("inspect", anc, werr)
		}
		missing = append([]string{anc}, missing...)
		anc = parentDir(anc)
	}
	if st.Type != hostfuncs.StatDir {
		return &hostfuncs.Error{Code: hostfuncs.CodeUnsafe, Message: "state directory " + dir + " cannot be created: " + anc + " is not a directory; point MCP_RESUME_STATE_DIR at a directory"}
	}
	if st.UID != euid && (st.UID != 0 || st.Mode&modeSticky == 0) {
		return &hostfuncs.Error{Code: hostfuncs.CodeUnsafe, Message: "state directory " + dir + " does not exist, and creating it would create " + missing[0] +
			" inside " + anc + ", which is owned by uid " + strconv.Itoa(st.UID) + ", not by this user (uid " + strconv.Itoa(euid) +
			"); run the server as uid " + strconv.Itoa(st.UID) + ", or point MCP_RESUME_STATE_DIR at a directory this user owns"}
	}
	for _, d := range missing {
		var mk hostfuncs.DirStat
		err := s.invoke(hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpMkdir, Path: d}, &mk, &mk.Error)
		if err == nil {
			continue
		}
		if werr := asWireError(err); werr.Code != hostfuncs.CodeExists {
			return dirFailure("create", d, werr)
		}
		if d == dir {
			return nil // judged by the caller
		}
		got, werr := s.dirStat(d, false)
		if werr != nil {
			return dirFailure("inspect", d, werr)
		}
		if got.Type != hostfuncs.StatDir || got.UID != euid {
			return &hostfuncs.Error{Code: hostfuncs.CodeUnsafe, Message: "state directory " + dir + " cannot be created: " + d +
				" appeared meanwhile and is not a directory of this user (uid " + strconv.Itoa(euid) + "); remove it or point MCP_RESUME_STATE_DIR elsewhere"}
		}
	}
	return nil
}

// dirStat is the "stat" primitive: lstat of path, or stat when follow.
func (s *Store) dirStat(path string, follow bool) (hostfuncs.DirStat, *hostfuncs.Error) {
	var st hostfuncs.DirStat
	if err := s.invoke(hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpStat, Path: path, Follow: follow}, &st, &st.Error); err != nil {
		return hostfuncs.DirStat{}, asWireError(err)
	}
	return st, nil
}

// judgeDir is the verdict on an existing state directory: a real directory
// owned by euid, mode 0700 or stricter (spec 000, Security Considerations).
func judgeDir(dir string, st hostfuncs.DirStat, euid int) *hostfuncs.Error {
	unsafe := func(msg string) *hostfuncs.Error {
		return &hostfuncs.Error{Code: hostfuncs.CodeUnsafe, Message: "state directory " + dir + " " + msg}
	}
	switch {
	case st.Type == hostfuncs.StatSymlink:
		return unsafe("is a symbolic link, which is never followed; point MCP_RESUME_STATE_DIR at the real directory")
	case st.Type != hostfuncs.StatDir:
		return unsafe("exists and is not a directory; remove it, or point MCP_RESUME_STATE_DIR at a directory")
	case st.UID != euid:
		return unsafe("is owned by uid " + strconv.Itoa(st.UID) + ", not by this user (uid " + strconv.Itoa(euid) + "); remove it or choose another with MCP_RESUME_STATE_DIR")
	case st.Mode&0o077 != 0:
		return unsafe("has mode " + mode4(st.Mode&0o777) + ", which lets other users in; run: chmod 700 " + dir)
	}
	return nil
}

// dirFailure words a primitive's failure on path from its code alone, so
// every host gives the same message; only CodeIO, which covers errors the
// contract does not name, carries the host's own message.
func dirFailure(verb, path string, werr *hostfuncs.Error) *hostfuncs.Error {
	what := "cannot " + verb + " " + path + ": "
	switch werr.Code {
	case hostfuncs.CodeNotFound:
		return &hostfuncs.Error{Code: hostfuncs.CodeNotFound, Message: what + "it does not exist"}
	case hostfuncs.CodePermission:
		return &hostfuncs.Error{Code: hostfuncs.CodePermission, Message: what + "permission denied; check the permissions of its parent directories, or point MCP_RESUME_STATE_DIR at a directory this user owns"}
	case hostfuncs.CodeNotDir:
		return &hostfuncs.Error{Code: hostfuncs.CodeNotDir, Message: what + "a component of the path is not a directory; point MCP_RESUME_STATE_DIR at a directory"}
	case hostfuncs.CodeNoSpace:
		return &hostfuncs.Error{Code: hostfuncs.CodeNoSpace, Message: what + "no space left on the device (or the disk quota is used up); free some space"}
	case hostfuncs.CodeReadOnly:
		return &hostfuncs.Error{Code: hostfuncs.CodeReadOnly, Message: what + "the file system is read-only; point MCP_RESUME_STATE_DIR at a writable directory"}
	case hostfuncs.CodeExists:
		return &hostfuncs.Error{Code: hostfuncs.CodeExists, Message: what + "something else is already there"}
	case hostfuncs.CodeUnsafe, hostfuncs.CodeInvalidRequest, hostfuncs.CodeUnsupported:
		return &hostfuncs.Error{Code: werr.Code, Message: what + werr.Message}
	}
	return &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: what + werr.Message}
}

// asWireError returns err as a *hostfuncs.Error (invoke returns nothing else but
// for a request that cannot be encoded).
func asWireError(err error) *hostfuncs.Error {
	if werr, ok := err.(*hostfuncs.Error); ok {
		return werr
	}
	return &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: err.Error()}
}

// parentDir is the parent of an absolute, clean path ("/" for "/").
func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// mode4 formats permission bits as four octal digits ("0755").
func mode4(m int) string {
	s := strconv.FormatInt(int64(m), 8)
	for len(s) < 4 {
		s = "0" + s
	}
	return s
}

// LockSocket returns the abstract Unix socket name (without its leading
// NUL) that every host on Linux binds for the lock file lock in the state
// directory dir (hostfuncs/README.md, mcp_resume_lock): "mcp-resume-lock-"
// and the first 40 hex digits of SHA-256(dir + "/" + lock). Computed here
// once, so that a Go, a Python and a Node server of one instance take the
// same lock. Two spellings of one directory (through a symbolic link) give
// two names; Go and Python still exclude each other then through flock.
// The host computes the digest (Digest); its failure is the error.
func LockSocket(call Caller, dir, lock string) (string, *hostfuncs.Error) {
	sums, err := Digest(call, []byte(dir+"/"+lock))
	if err != nil {
		return "", err
	}
	return "mcp-resume-lock-" + hex.EncodeToString(sums[0][:20]), nil
}

// Digest returns the SHA-256 of each message (at most
// hostfuncs.CryptoMaxBatch), computed by the host (mcp_resume_crypto
// sha256): the plugin carries no hash code of its own. Errors: the host's
// *hostfuncs.Error, or CodeIO for an answer of the wrong length.
func Digest(call Caller, msgs ...[]byte) ([][32]byte, *hostfuncs.Error) {
	status, out, err := Crypto(call, hostfuncs.SHA256Request(msgs...))
	if err == nil && (status != hostfuncs.CryptoStatusOK || len(out) != 32*len(msgs)) {
		err = &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: "mcp_resume_crypto sha256 answered " + strconv.Itoa(len(out)) + " bytes for " + strconv.Itoa(len(msgs)) + " digests"}
	}
	if err != nil {
		return nil, err
	}
	sums := make([][32]byte, len(msgs))
	for i := range sums {
		copy(sums[i][:], out[32*i:])
	}
	return sums, nil
}
