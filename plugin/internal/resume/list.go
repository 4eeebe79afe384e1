package resume

// The list and prune exports: what is in the state directory, whether the
// MCP host each file names is alive, and removing the files of hosts that
// are gone (spec 000, PID Reuse).

import (
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/procid"
)

// MaxAge is how old (by modification time) a token file may grow when its
// host's liveness cannot be checked, before Prune removes it. A file whose
// host is alive is never removed, whatever its age; a lock file is removed
// only when its host is gone.
const MaxAge = 30 * 24 * 60 * 60 // seconds

// fixListDir makes sure the state directory is judged usable for list and
// prune without creating it (prepareDir without create: no "mkdir"). It reports
// false when there is nothing to list: resume off, no state directory, or a
// directory that does not exist; and a hostfuncs.CodeIO error, worded by
// prepareDir, when the directory is unusable.
func (s *Store) fixListDir() (bool, *hostfuncs.Error) {
	if s.listDir {
		return true, nil
	}
	if s.cfg.Off || s.cfg.StateDir == "" {
		return false, nil
	}
	found, werr := s.prepareDir(false)
	switch {
	case werr != nil:
		return false, &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: werr.Message}
	case !found:
		return false, nil
	}
	s.listDir = true
	return true, nil
}

// dirError is the hostfuncs.CodeIO export error for a state directory the host
// refused or could not list: the host's message, which names the directory
// when it comes from a real host's prepare_dir, else that message after
// "state directory <dir>: ". The host's code is not repeated in it: the
// directory is said once, so a CLI can print the message as it is.
func dirError(dir string, err error) *hostfuncs.Error {
	msg := err.Error()
	if werr, ok := err.(*hostfuncs.Error); ok {
		msg = werr.Message
	}
	if !strings.Contains(msg, dir) {
		msg = "state directory " + dir + ": " + msg
	}
	return &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: msg}
}

// hosts answers liveness for files with procid.Liveness (one inspect call
// for up to 20 files on Linux).
func (s *Store) hosts(files []listed) []string {
	refs := make([]procid.HostRef, len(files))
	for i, f := range files {
		refs[i] = procid.HostRef{PID: f.parsed.PID, StartTime: f.parsed.StartTime}
	}
	if !s.factsOK || len(refs) == 0 {
		states := make([]string, len(refs))
		for i := range states {
			states[i] = hostfuncs.HostUnknown
		}
		return states
	}
	return procid.Liveness(s.facts, s.inspect, refs)
}

// List is the list export: every token file in the state directory whose
// name parses as token-<pid>-<start_time>[-<instance>], with whether its host
// is alive, gone or unknown (procid.Liveness), then every ambiguity marker
// (ambiguous-<instance>: host "ambiguous", pid 0, no start time), each with
// its age in whole seconds,
// at least 0 (a host may report -1 for a file written a moment ago: its
// clock and the file system's timestamps differ in resolution). It
// needs no identity, never reads a token, and never creates the state
// directory (a missing one lists nothing). With MCP_RESUME=off it lists
// nothing. Errors: hostfuncs.CodeNotOpen; hostfuncs.CodeIO when the directory cannot
// be listed.
func (s *Store) List() (hostfuncs.ListOutput, *hostfuncs.Error) {
	out := hostfuncs.ListOutput{Files: []hostfuncs.TokenFile{}}
	if !s.opened {
		return out, notOpen()
	}
	ok, werr := s.fixListDir()
	if !ok {
		return out, werr
	}
	all, err := s.entries()
	if errCode(err) == hostfuncs.CodeNotFound {
		return out, nil
	}
	if err != nil {
		return out, dirError(s.cfg.StateDir, err)
	}
	files := scan(all, FilePrefix)
	states := s.hosts(files)
	for i, f := range files {
		out.Files = append(out.Files, hostfuncs.TokenFile{Name: f.name, PID: f.parsed.PID, StartTime: f.parsed.StartTime,
			Instance: f.parsed.Instance, Host: states[i], AgeSeconds: max(f.age, 0)})
	}
	for _, m := range scan(all, MarkerPrefix) {
		out.Files = append(out.Files, hostfuncs.TokenFile{Name: m.name, Instance: m.parsed.Instance, Host: hostfuncs.HostAmbiguous, AgeSeconds: max(m.age, 0)})
	}
	return out, nil
}

// Prune is the prune export: it removes the token and lock files of hosts
// that are gone (the pid is absent, a zombie, or names another process or
// boot), the token files whose host cannot be checked once older than
// MaxAge (never lock files: their modification time never moves, so age
// says nothing about whether an instance still holds one), and the
// ambiguity markers no instance has met for MaxAge (each instance that
// meets one rewrites it, so its age is the time since its key was last
// seen; reason "unseen"). It never removes a live host's files, nor this
// instance's own (its marker included). It needs no identity, so
// `mcp-resume prune` can run it for any state directory, and never creates
// the directory. Failures are skipped: when unsure, keep. Error:
// hostfuncs.CodeNotOpen.
func (s *Store) Prune() (hostfuncs.PruneOutput, *hostfuncs.Error) {
	if !s.opened {
		return hostfuncs.PruneOutput{Removed: []hostfuncs.PrunedFile{}}, notOpen()
	}
	none := hostfuncs.PruneOutput{Removed: []hostfuncs.PrunedFile{}}
	if ok, _ := s.fixListDir(); !ok {
		return none, nil
	}
	all, err := s.entries()
	if err != nil {
		return none, nil
	}
	return s.prune(all), nil
}

// prune implements Prune on all, a listing of the judged state directory.
func (s *Store) prune(all []hostfuncs.ListEntry) hostfuncs.PruneOutput {
	out := hostfuncs.PruneOutput{Removed: []hostfuncs.PrunedFile{}}
	var files []listed
	for _, f := range scan(all, FilePrefix, LockPrefix) {
		if f.name != s.file && f.name != s.lock {
			files = append(files, f)
		}
	}
	states := s.hosts(files)
	for _, m := range scan(all, MarkerPrefix) {
		if m.name != s.marker && m.age > MaxAge {
			files = append(files, m)
			states = append(states, hostfuncs.HostAmbiguous)
		}
	}
	for i, f := range files {
		reason := ""
		switch {
		case states[i] == hostfuncs.HostGone:
			// A gone host's names can never be computed again, so its
			// lock is dead for sure.
			reason = hostfuncs.ReasonHostGone
		case states[i] == hostfuncs.HostUnknown && f.age > MaxAge && f.prefix == FilePrefix:
			reason = hostfuncs.ReasonAged
		case f.prefix == MarkerPrefix:
			reason = hostfuncs.ReasonUnseen
		default:
			continue
		}
		var e hostfuncs.Empty
		if err := s.invoke(hostfuncs.FnRemove, hostfuncs.NameRequest{Name: f.name}, &e, &e.Error); err != nil {
			continue
		}
		out.Removed = append(out.Removed, hostfuncs.PrunedFile{Name: f.name, Reason: reason, Host: states[i]})
		detail := f.name + ": host " + states[i]
		switch reason {
		case hostfuncs.ReasonAged:
			detail += ", older than 30 days"
		case hostfuncs.ReasonUnseen:
			detail = f.name + ": ambiguity marker unseen for 30 days"
		}
		s.log(hostfuncs.LevelInfo, EventStaleRemoved, MsgStaleRemoved, detail)
	}
	return out
}
