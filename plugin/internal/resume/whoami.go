package resume

// The whoami export: the identity this store resolves, and what it would
// be for another running server process, for `mcp-resume whoami`.

import (
	"errors"
	"strconv"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/procid"
)

// Whoami is the whoami export: the MCP host this process resolves
// (procid.Resolve), the chain of processes walked with their roles, how the
// stdio check went, the trust rule's verdict (procid.CheckTrust, or the
// opt-in that skipped it), the instance suffix, the file names it would use
// (the ambiguity marker's included) and the state directory. It touches no
// file. When the identity is unavailable,
// Error says why and the chain holds what was read.
//
// input is empty or the JSON hostfuncs.WhoamiInput: a pid other than this
// process's asks what that running server would resolve
// (procid.ResolveFor, then procid.CheckTrust without the opt-in, which
// that server's environment would give), with this store's instance key
// and state directory; it does not change this store's own identity. With
// the default key the names of another process are left empty: its key
// holds its working directory at start, which cannot be read from outside.
// Errors: hostfuncs.CodeNotOpen;
// hostfuncs.CodeInvalidOption for input that is not a WhoamiInput, a pid of
// 1 or below 0, or a pid no process has ("no process has pid N: ...").
func (s *Store) Whoami(input []byte) (hostfuncs.WhoamiOutput, *hostfuncs.Error) {
	out := hostfuncs.WhoamiOutput{Chain: []hostfuncs.Process{}}
	if !s.opened {
		return out, notOpen()
	}
	var in hostfuncs.WhoamiInput
	if err := in.DecodeJSON(input); err != nil {
		return out, &hostfuncs.Error{Code: hostfuncs.CodeInvalidOption, Message: "whoami input: " + err.Error()}
	}
	if in.PID < 0 || in.PID == 1 {
		return out, &hostfuncs.Error{Code: hostfuncs.CodeInvalidOption, Message: "pid " + strconv.Itoa(in.PID) + " is not a server process: give the pid of a running MCP server"}
	}
	out.StateDir = s.cfg.StateDir
	if in.PID != 0 && in.PID != s.facts.PID {
		return s.whoamiOther(in.PID, out)
	}
	ok := s.resolveNames()
	// A host refused by the trust rule was resolved: the chain shows it.
	out.Chain = s.id.WireChain(ok || errors.Is(s.idErr, procid.ErrSharedHost))
	if !ok {
		switch {
		case s.cfg.Off:
			out.Error = MsgResumeOff
		case s.cfg.KeyProblem != "":
			out.Error = MsgKeyInexact + ": " + s.cfg.KeyProblem
		case s.key.event != "":
			out.Error = s.key.msg + ": " + s.key.detail
		default:
			out.Error = s.idProblem()
		}
		return out, nil
	}
	out.PID, out.StartTime, out.Stdio, out.Trust = s.id.PID, s.id.StartTime, s.id.Stdio, s.id.Trust
	out.TokenFile, out.LockFile = s.file, s.lock
	out.InstanceSuffix, out.MarkerFile = s.key.suffix, s.marker
	return out, nil
}

// whoamiOther fills out for the running server process pid
// (procid.ResolveFor), without touching this store's own identity. A pid
// that names no process is the caller's mistake, not an identity to show:
// it fails with hostfuncs.CodeInvalidOption.
func (s *Store) whoamiOther(pid int, out hostfuncs.WhoamiOutput) (hostfuncs.WhoamiOutput, *hostfuncs.Error) {
	if s.cfg.Off {
		out.Error = MsgResumeOff
		return out, nil
	}
	if !s.factsOK || s.cfg.Problem != "" && s.cfg.StateDir != "" {
		out.Error = s.cfg.Problem
		return out, nil
	}
	id, err := procid.ResolveFor(s.facts, pid, s.cfg.Launchers, s.inspect)
	if errors.Is(err, procid.ErrNotFound) && s.noProcess(pid) {
		return out, &hostfuncs.Error{Code: hostfuncs.CodeInvalidOption, Message: "no process has pid " + strconv.Itoa(pid) + ": give the pid of a running MCP server"}
	}
	if err == nil {
		// The rule as the server would apply it, without its opt-in: the
		// server's own MCP_RESUME and MCP_RESUME_INSTANCE are not known
		// here.
		id.Trust, err = procid.CheckTrust(s.facts, id, s.inspect)
		out.Chain = id.WireChain(true)
	} else {
		out.Chain = id.WireChain(false)
	}
	if err != nil {
		out.Error = err.Error()
		return out, nil
	}
	out.PID, out.StartTime, out.Stdio, out.Trust = id.PID, id.StartTime, id.Stdio, id.Trust
	if s.cfg.DefaultKey {
		// Its working directory at start cannot be read from here, so
		// neither can its default key: no names.
		return out, nil
	}
	k := s.keyFor(strconv.Itoa(pid), id.PID, "", false)
	if k.event != "" {
		out.Error = k.msg + ": " + k.detail
		return out, nil
	}
	out.InstanceSuffix, out.MarkerFile = k.suffix, k.marker
	out.TokenFile = FileName(id.PID, id.StartTime, k.suffix)
	out.LockFile = lockName(id.PID, id.StartTime, k.suffix)
	return out, nil
}

// noProcess reports whether no process has pid, as kill(pid, 0) answers
// it (ESRCH: not_found); a process that is gone from a walk's chain, or
// one hidden from this user, is not this.
func (s *Store) noProcess(pid int) bool {
	r, err := s.inspect([]hostfuncs.InspectOp{{Op: hostfuncs.OpKill0, PID: strconv.Itoa(pid)}})
	return err == nil && len(r) == 1 && r[0].Error != nil && r[0].Error.Code == hostfuncs.CodeNotFound
}

// ChainText is the ancestor chain in one line, from the server's parent up
// to the host, for the host_identified debug line: each process as
// <pid> <name> (<role>), separated by " > ", e.g.
// "4300 npm exec serv (launcher) > 4242 claude (host)".
func ChainText(chain []hostfuncs.Process) string {
	out := ""
	for i, p := range chain {
		if i > 0 {
			out += " > "
		}
		out += strconv.Itoa(p.PID) + " " + p.Name + " (" + p.Role + ")"
	}
	return out
}
