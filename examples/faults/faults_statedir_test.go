//go:build linux && faults

package faults_test

// Faults 1-6: the state directory and its files are unusable (no space,
// read-only, another user's, symbolic links, a world-readable token, a
// directory the server must not use).

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// 1. No space left on device.
func faultNoSpace(t *testing.T, s *server) {
	requireRoot(t)
	ns := newMountNS(t)
	f := newFx(t, s)
	mnt := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(mnt, 0o700)
	ns.Run("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", mnt)
	f.StateDir = filepath.Join(mnt, "state", f.App)
	inside := ns.Path(f.StateDir)
	f.dirs = []string{inside}
	argv := ns.Argv(s.cmd()...)

	first := f.launch(argv, nil, "")
	// The server's mount namespace is not its host's, so its file names
	// carry the namespaces' digest (fault 31): the one token file.
	tokenPath := onlyToken(t, inside)
	before := mustRead(t, tokenPath)

	fill, err := os.OpenFile(ns.Path(filepath.Join(mnt, "fill")), os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err = fill.Write(chunk); err != nil {
			break
		}
	}
	fill.Close()
	if !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("filling the tmpfs ended with %v, want ENOSPC", err)
	}

	second := f.launch(argv, nil, "")
	if !second.Resumed || second.SessionID != first.SessionID {
		t.Errorf("relaunch on a full file system: %+v, want session %s resumed (reading needs no space)", second, first.SessionID)
	}
	wf := f.mustLog(lineWriteFailed, "no space left on device")
	if after := mustRead(t, tokenPath); !bytes.Equal(after, before) {
		t.Errorf("the token file changed (%d bytes -> %d) although the write failed", len(before), len(after))
	}
	if tmp := tempFiles(inside); len(tmp) > 0 {
		t.Errorf("a failed write left temporary files: %v", tmp)
	}
	third := f.launch(argv, nil, "")
	if third.Resumed {
		t.Errorf("resumed with a token the broker had rotated: %+v", third)
	}
	rej := f.mustLog(lineRejected)
	f.row("1", "No space left on device",
		"state dir on a 64 KiB tmpfs in a private mount namespace (server entered with `nsenter`, so the test stays its host), filled until ENOSPC",
		"relaunch resumed its own session (reading needs no space); writing the rotated token failed, the file kept the previous token complete and no temp file was left; the next launch offered that stale token, the broker refused it, fresh session",
		[]string{wf, rej}, "no")
}

// onlyToken returns the path of the one token file in dir, failing the
// test (Fatal) when there is not exactly one.
func onlyToken(t *testing.T, dir string) string {
	t.Helper()
	m := tokenNames(dir)
	if len(m) != 1 {
		t.Fatalf("token files in %s: %v, want one", dir, m)
	}
	return m[0]
}

// 2. Read-only state directory.
func faultReadOnly(t *testing.T, s *server) {
	requireRoot(t)
	t.Run("lock_file_present", func(t *testing.T) {
		f := newFx(t, s)
		// Every launch in one mount namespace: the namespaces are part of
		// the key (fault 31), so a launch outside would be another instance.
		ns := newMountNS(t)
		argv := ns.Argv(s.cmd()...)
		first := f.launch(argv, nil, "")
		tokenPath := onlyToken(t, f.StateDir)
		before := mustRead(t, tokenPath)
		ns.Run("mount", "--bind", f.StateDir, f.StateDir)
		ns.Run("mount", "-o", "remount,bind,ro", f.StateDir)

		second := f.launch(argv, nil, "")
		if !second.Resumed || second.SessionID != first.SessionID {
			t.Errorf("read-only relaunch: %+v, want session %s resumed (loading needs no write)", second, first.SessionID)
		}
		wf := f.mustLog(lineWriteFailed, "read-only file system")
		third := f.launch(argv, nil, "")
		if third.Resumed {
			t.Errorf("resumed with a token the broker had rotated: %+v", third)
		}
		rej := f.mustLog(lineRejected)
		df := f.mustLog(lineDeleteFailed, "read-only file system")
		if after := mustRead(t, tokenPath); !bytes.Equal(after, before) {
			t.Error("the token file changed on a read-only file system")
		}
		f.row("2a", "Read-only state directory",
			"a token stored by the server in a private mount namespace (`nsenter`, so the test stays its host), then the state dir bind-mounted read-only there",
			"relaunch resumed its own session; the rotated token could not be written; the next launch offered the stale token, the broker refused it, deleting the file failed too, fresh session; the file is unchanged",
			[]string{wf, rej, df}, "no")
	})
	t.Run("no_lock_file", func(t *testing.T) {
		f := newFx(t, s)
		ns := newMountNS(t)
		first := f.launch(ns.Argv(s.cmd()...), nil, "")
		locks, _ := filepath.Glob(filepath.Join(f.StateDir, "lock-*"))
		for _, l := range locks {
			os.Remove(l)
		}
		ns.Run("mount", "--bind", f.StateDir, f.StateDir)
		ns.Run("mount", "-o", "remount,bind,ro", f.StateDir)
		second := f.launch(ns.Argv(s.cmd()...), nil, "")
		var outcome string
		var logs []string
		switch {
		case f.logged(lineLockFailed):
			if second.Resumed {
				t.Errorf("resumed although the lock failed: %+v", second)
			}
			logs = []string{f.mustLog(lineLockFailed, "read-only file system")}
			outcome = "resume off for the instance: the lock file cannot be created on a read-only file system, so the stored token was not even read; fresh session (the session is lost, never another's resumed)"
		default:
			if !second.Resumed || second.SessionID != first.SessionID {
				t.Errorf("read-only relaunch: %+v, want session %s resumed", second, first.SessionID)
			}
			logs = []string{f.mustLog(lineWriteFailed, "read-only file system")}
			outcome = "relaunch resumed its own session; the rotated token could not be written"
		}
		f.row("2b", "Read-only state directory, no lock file yet",
			"as 2a, with the lock file deleted before the remount (a directory restored from a backup)",
			outcome, logs, "no")
	})
}

// 3. Unwritable state directory: the server runs as uid 65534.
func faultUnwritable(t *testing.T, s *server) {
	n := newNobody(t, s)
	t.Run("write_eacces", func(t *testing.T) {
		f := newFx(t, s)
		f.StateDir = n.appDir(t, "state-3a", f.App, 0o700)
		lock := filepath.Join(f.StateDir, hostNames(t).lock)
		os.WriteFile(lock, nil, 0o600)
		os.Chown(lock, 65534, 65534)
		os.Chmod(f.StateDir, 0o500)
		before := listing(t, f.StateDir)
		a := f.launch(n.argvCaps(), n.env, "")
		b := f.launch(n.argvCaps(), n.env, "")
		if a.Resumed || b.Resumed || a.SessionID == b.SessionID {
			t.Errorf("resume without a stored token: %+v %+v", a, b)
		}
		nf := f.mustLog(lineNotFound)
		wf := f.mustLog(lineWriteFailed, "permission denied")
		if after := listing(t, f.StateDir); after != before {
			t.Errorf("state directory changed:\n%s\nwas:\n%s", after, before)
		}
		f.row("3a", "Unwritable state directory",
			"server run as uid 65534 (`setpriv`, keeping only CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH so that it can check its root host's stdio) with a state dir it owns at mode 0500 (its lock file present)",
			"the directory check passes; every launch: no token, the write fails with EACCES, fresh session; the directory is unchanged",
			[]string{nf, wf}, "no")
	})
	t.Run("lock_eacces", func(t *testing.T) {
		f := newFx(t, s)
		f.StateDir = n.appDir(t, "state-3b", f.App, 0o500)
		a := f.launch(n.argvCaps(), n.env, "")
		if a.Resumed {
			t.Errorf("resumed: %+v", a)
		}
		var logs []string
		outcome := "fresh session; nothing written"
		if f.logged(lineLockFailed) {
			logs = []string{f.mustLog(lineLockFailed, "permission denied")}
			outcome = "the lock file cannot be created: resume off for the instance, fresh session, nothing written"
		} else {
			logs = []string{f.mustLog(lineWriteFailed, "permission denied")}
		}
		if entries, _ := os.ReadDir(f.StateDir); len(entries) != 0 {
			t.Errorf("files appeared in an unwritable directory: %v", entries)
		}
		f.row("3b", "Unwritable state directory, no lock file", "as 3a without the lock file", outcome, logs, "no")
	})
	t.Run("mkdir_eacces", func(t *testing.T) {
		f := newFx(t, s)
		parent := filepath.Join(n.base, "root-owned")
		os.Mkdir(parent, 0o755)
		f.StateDir = filepath.Join(parent, "state", f.App)
		a := f.launch(n.argvCaps(), n.env, "")
		if a.Resumed {
			t.Errorf("resumed: %+v", a)
		}
		// The plugin creates a directory only inside one of this user's (or
		// a root-owned sticky one): it never tries the mkdir.
		du := f.mustLog(lineDirUnusable, "does not exist, and creating it would create", "which is owned by uid 0, not by this user (uid 65534)")
		if _, err := os.Lstat(f.StateDir); !os.IsNotExist(err) {
			t.Errorf("state directory exists: %v", err)
		}
		f.row("3c", "State directory cannot be created",
			"server as uid 65534, keeping CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH to inspect its root host, as in 3a; the state dir is missing and its parent is root's (0755)",
			"resume off for the instance, fresh session", []string{du}, "no")
	})
}

// 4. Symlinks planted at the token path, at temporary names, at the lock.
func faultSymlinks(t *testing.T, s *server) {
	t.Run("token_path", func(t *testing.T) {
		f := newFx(t, s)
		me := hostNames(t)
		other := filepath.Join(t.TempDir(), "other", f.App)
		otherRun := f.launch(s.cmd(), []string{f.StateVar(other)}, "")
		target := filepath.Join(other, me.token)
		otherTok := mustRead(t, target)
		f.tokens[string(otherTok)] = true
		os.Mkdir(f.StateDir, 0o700)
		link := filepath.Join(f.StateDir, me.token)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		a := f.launch(s.cmd(), nil, "")
		wrong := a.SessionID == otherRun.SessionID
		if wrong || a.Resumed {
			t.Errorf("followed a symlink to another session's token: %+v (other %s)", a, otherRun.SessionID)
		}
		c := f.mustLog(lineCorrupt)
		checkTokenFile(t, link)
		if !bytes.Equal(mustRead(t, target), otherTok) {
			t.Error("the symlink's target changed")
		}
		b := f.launch(s.cmd(), nil, "")
		if !b.Resumed || b.SessionID != a.SessionID {
			t.Errorf("relaunch: %+v, want %s resumed", b, a.SessionID)
		}
		f.row("4a", "Symlink at the token path",
			"`token-<pid>-<start>` is a symlink to a file outside the state dir holding another live session's valid token",
			"not followed (O_NOFOLLOW): treated as corrupt, the symlink was unlinked and replaced by a regular 0600 file, the target untouched; fresh session, resumed on the next launch",
			[]string{c}, wrongIf(wrong, "followed the symlink"))
	})
	t.Run("temp_names", func(t *testing.T) {
		f := newFx(t, s)
		me := hostNames(t)
		os.Mkdir(f.StateDir, 0o700)
		outside := t.TempDir()
		sentinel := filepath.Join(outside, "sentinel")
		os.WriteFile(sentinel, []byte("sentinel"), 0o600)
		var planted []string
		for i := 0; i < 2000; i++ {
			var rnd [8]byte
			for j := range rnd {
				rnd[j] = byte(rand.Uint32())
			}
			name := filepath.Join(f.StateDir, "."+me.token+"."+hex.EncodeToString(rnd[:])+".tmp")
			target := sentinel
			if i%2 == 1 {
				target = filepath.Join(outside, fmt.Sprintf("ghost-%d", i)) // dangling: O_CREAT through it would create it
			}
			if err := os.Symlink(target, name); err != nil {
				t.Fatal(err)
			}
			planted = append(planted, name)
		}
		a := f.launch(s.cmd(), nil, "")
		b := f.launch(s.cmd(), nil, "")
		if a.Resumed || !b.Resumed || b.SessionID != a.SessionID {
			t.Errorf("launches %+v then %+v, want fresh then resumed", a, b)
		}
		if got, _ := os.ReadFile(sentinel); string(got) != "sentinel" {
			t.Error("the sentinel outside the state directory changed")
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 1 {
			t.Errorf("%d entries outside the state directory, want only the sentinel", len(entries))
		}
		for _, p := range planted {
			if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("planted symlink %s: %v %v", p, fi, err)
			}
		}
		checkTokenFile(t, filepath.Join(f.StateDir, me.token))
		r := f.mustLog(lineResumed)
		f.row("4b", "Symlinks at temporary names",
			"2000 symlinks named `.token-<pid>-<start>.<16 hex>.tmp`, half to a sentinel file outside, half dangling",
			"stores and resume worked; no target was written or created, the symlinks stayed; a temp name is 64 random bits opened O_CREAT|O_EXCL|O_NOFOLLOW, which fails on any existing name (a forced collision is the Go host's TestWrite_Temp)",
			[]string{r}, "no")
	})
	t.Run("lock_path", func(t *testing.T) {
		f := newFx(t, s)
		me := hostNames(t)
		os.Mkdir(f.StateDir, 0o700)
		sentinel := filepath.Join(t.TempDir(), "sentinel")
		os.WriteFile(sentinel, []byte("sentinel"), 0o600)
		os.Symlink(sentinel, filepath.Join(f.StateDir, me.lock))
		a := f.launch(s.cmd(), nil, "")
		if a.Resumed {
			t.Errorf("resumed: %+v", a)
		}
		if got, _ := os.ReadFile(sentinel); string(got) != "sentinel" {
			t.Error("the sentinel changed")
		}
		var logs []string
		outcome := "the lock path is not used; fresh session"
		if f.logged(lineLockFailed) {
			logs = []string{f.mustLogOne(lineLockFailed, "symbolic link", "symlink", "unsafe")}
			outcome = "not followed (O_NOFOLLOW): resume off for the instance, fresh session, the sentinel untouched"
		}
		f.row("4c", "Symlink at the lock path", "`lock-<pid>-<start>` is a symlink to a sentinel file outside", outcome, logs, "no")
	})
}

// 5. A token file with mode 0644.
func faultMode0644(t *testing.T, s *server) {
	f := newFx(t, s)
	me := hostNames(t)
	a := f.launch(s.cmd(), nil, "")
	path := filepath.Join(f.StateDir, me.token)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	b := f.launch(s.cmd(), nil, "")
	if !b.Resumed || b.SessionID != a.SessionID {
		t.Errorf("relaunch with a 0644 token file: %+v, want %s resumed", b, a.SessionID)
	}
	checkTokenFile(t, path)
	r := f.mustLog(lineResumed)
	f.row("5", "Token file with mode 0644", "`chmod 0644` on the stored token file (the directory stays 0700)",
		"accepted: the 0700 directory is the boundary, only this user or root can have written the file; relaunch resumed its own session and the rotated token was written as a new 0600 file",
		[]string{r}, "no")
}

// 6. A state directory the server must not use.
func faultUnusableDir(t *testing.T, s *server) {
	requireRoot(t)
	me := hostNames(t)
	cases := []struct {
		id, fault, injection string
		// setup makes path unusable with tok (a valid token of this host)
		// inside, and returns what to watch.
		setup func(t *testing.T, path string, tok []byte) string
	}{
		{"6a", "State dir owned by another user, group-writable", "state dir chown 65534, mode 0770",
			func(t *testing.T, path string, tok []byte) string {
				plantDir(t, path, me.token, tok, 0o770)
				os.Chown(path, 65534, 65534)
				return path
			}},
		{"6b", "State dir owned by another user", "state dir chown 65534, mode 0700",
			func(t *testing.T, path string, tok []byte) string {
				plantDir(t, path, me.token, tok, 0o700)
				os.Chown(path, 65534, 65534)
				return path
			}},
		{"6c", "State dir group-writable", "state dir owned by the user, mode 0770",
			func(t *testing.T, path string, tok []byte) string {
				plantDir(t, path, me.token, tok, 0o770)
				return path
			}},
		{"6d", "State dir world-readable", "state dir owned by the user, mode 0755",
			func(t *testing.T, path string, tok []byte) string {
				plantDir(t, path, me.token, tok, 0o755)
				return path
			}},
		{"6e", "State dir is a symlink", "state dir path is a symlink to a 0700 directory",
			func(t *testing.T, path string, tok []byte) string {
				real := path + "-real"
				plantDir(t, real, me.token, tok, 0o700)
				os.Symlink(real, path)
				return real
			}},
		{"6f", "State dir is a regular file", "state dir path is a regular file (holding the token)",
			func(t *testing.T, path string, tok []byte) string {
				os.WriteFile(path, tok, 0o600)
				return path
			}},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			f := newFx(t, s)
			good := filepath.Join(t.TempDir(), "good", f.App)
			s0 := f.launch(s.cmd(), []string{f.StateVar(good)}, "")
			tok := mustRead(t, filepath.Join(good, me.token))
			f.tokens[string(tok)] = true
			path := filepath.Join(t.TempDir(), "state", f.App)
			os.Mkdir(filepath.Dir(path), 0o700)
			watched := c.setup(t, path, tok)
			var before string
			if fi, _ := os.Stat(watched); fi.IsDir() {
				before = listing(t, watched)
			}
			w := watch(t, watched)
			a := f.launch(s.cmd(), []string{f.StateVar(path)}, "")
			events := w.events()
			wrong := a.SessionID == s0.SessionID
			if wrong || a.Resumed {
				t.Errorf("resumed from an unusable directory: %+v (planted session %s)", a, s0.SessionID)
			}
			du := f.mustLog(lineDirUnusable)
			if len(events) > 0 {
				t.Errorf("the server touched the unusable directory: %v", events)
			}
			if before != "" {
				if after := listing(t, watched); after != before {
					t.Errorf("directory changed:\n%s\nwas:\n%s", after, before)
				}
			}
			f.row(c.id, c.fault, c.injection+", a valid token of this host's live session inside",
				"resume off for the instance, fresh session; inotify saw no access at all (nothing read, nothing created)",
				[]string{du}, wrongIf(wrong, "resumed the planted session"))
		})
	}
}
