package resume

// Ambiguity: two live server instances under one host with one instance
// key. The lifetime lock lets only one of them own the token file, but
// which one resumes after a crash and a restart is chance: the other's
// session may be the one resumed. So the second instance marks the key
// ambiguous with a file that names no host, and while it exists no
// instance of that key resumes (README.md, "Several instances under one
// host"; plugin/README.md, "Files").

import "github.com/mcp-resume/mcp-resume/hostfuncs"

// MarkerContent is what an ambiguity marker holds: a note for a person who
// finds it. The plugin reads only whether the file exists.
const MarkerContent = "mcp-resume: two server instances under one MCP host had this instance key at once, so no instance with it resumes a session; give each server entry its own MCP_RESUME_INSTANCE. Removed after 30 days unused.\n"

// hasEntry reports whether the listing all holds an entry named name, of
// any type: a directory or link in the marker's place marks the key too
// (when unsure, resume nothing).
func hasEntry(all []hostfuncs.ListEntry, name string) bool {
	for _, e := range all {
		if e.Name == name {
			return true
		}
	}
	return false
}

// setAmbiguous turns resume off for this store's key: it writes the marker
// (written: this instance found the lock busy) or rewrites it (found: its
// modification time then says when the key was last seen, for the prune),
// deletes the token file, and logs instance_ambiguous once per store.
func (s *Store) setAmbiguous(written bool) {
	if s.ambiguous {
		return
	}
	s.ambiguous = true
	if err := s.write(s.marker, []byte(MarkerContent)); err != nil && written {
		s.log(hostfuncs.LevelError, EventWriteFailed, MsgWriteFailedPrefix+err.Error(), "")
	}
	s.remove()
	msg := MsgAmbiguous
	if !s.cfg.DefaultKey {
		msg = MsgAmbiguousDeclared
	}
	detail := "found " + s.marker
	if written {
		detail = "another live instance under this host holds " + s.lock + "; wrote " + s.marker
	}
	s.log(hostfuncs.LevelWarn, EventAmbiguous, msg, detail+": while it exists, no instance with this key loads or stores a token")
}

// checkAmbiguous reports whether the key is marked ambiguous, for a load
// or store of an instance that holds the lock: another instance may have
// marked it since. The first call after init uses init's listing; later
// ones read the marker: present when it reads, or when something that is
// not a regular file stands in its place (unsafe); any other failure is not
// taken for a marker, which would stop the key for good.
func (s *Store) checkAmbiguous() bool {
	switch {
	case s.ambiguous:
		return true
	case s.marker == "":
		return false
	case s.listed:
		s.listed = false
		return false
	}
	var r hostfuncs.ReadResponse
	if err := s.invoke(hostfuncs.FnRead, hostfuncs.ReadRequest{Name: s.marker, Limit: 1}, &r, &r.Error); err != nil && errCode(err) != hostfuncs.CodeUnsafe {
		return false
	}
	s.setAmbiguous(false)
	return true
}
