// Package resume is the resume-token store of spec 000 ("MCP Server Session
// Resume Specification v1"), written against the host-function contract of
// hostfuncs/README.md (ABI version 6) so that one implementation serves
// every host.
//
// It is plain Go: the plugin (plugin/guest) compiles it to Wasm and forwards
// its exports here; tests run it natively against a Caller. It never touches
// the operating system itself: facts, process inspection, files and logging
// all go through a Caller. Every policy decision about processes (who the
// MCP host is, whether a file's host is alive) comes from procid; the
// defaults of open are config.go's.
//
// Files by concern: resume.go opens the store and runs load, store and
// reject; list.go lists and prunes the state directory; whoami.go reports
// the identity; names.go holds the token and file-name rules; config.go the
// open defaults; dir.go the state directory's checks; files.go the plugin's
// rules about the names in it.
//
// A Store is not safe for concurrent use; hosts serialise calls into the
// plugin instance that owns it.
package resume

import (
	"errors"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/procid"
)

// The spec's log lines, verbatim (spec 000, Logging Strategy), and ours.
const (
	MsgNotFound            = "Token file not found (first run or clean slate)"
	MsgCorrupted           = "Token file corrupted, treating as stale"
	MsgIdentityUnavailable = "Could not verify parent process start time, session resume disabled for this instance"
	MsgRejected            = "Broker rejected resume token, starting fresh session"
	MsgResumed             = "Session resumed successfully"
	MsgWriteFailedPrefix   = "Failed to write token file: "
	// Ours: the state directory failed the host's ownership/mode checks.
	MsgDirUnusable = "State directory unusable, session resume disabled for this instance"
	// Ours: reject found a different (newer) token in the file and kept it
	// (the reconnection race: another instance stored a newer token meanwhile).
	MsgRejectKeptNewer = "Token file holds a newer token, leaving it in place"
	// Ours: deleting a corrupted or rejected token file failed.
	MsgDeleteFailedPrefix = "Failed to delete token file: "
	// Ours: another instance under the same host, launched the same way, owns the token file.
	MsgInstanceBusy = "Another server instance under this host holds the token file, session resume disabled for this instance"
	// Ours: the lock could not be taken for another reason (read-only directory, ...).
	MsgLockFailed = "Could not lock the token file, session resume disabled for this instance"
	// Ours: a file of a host that is gone (or too old to check) was removed.
	MsgStaleRemoved = "Removed stale token file"
	// Ours: MCP_RESUME=off.
	MsgResumeOff = "Session resume turned off by MCP_RESUME=off"
	// Ours: an input of the instance key reached the plugin as U+FFFD
	// (bytes that are not UTF-8), so launches that differ only there would
	// share one session (Config.KeyProblem).
	MsgKeyInexact = "Instance key holds bytes the host could not carry exactly, session resume disabled for this instance"
	// Ours: what the instance key is read from (the server's launch or
	// namespaces) could not be read (key.go).
	MsgKeyUnreadable = "Could not read what tells this server's launches apart, session resume disabled for this instance"
	// Ours: two live instances under one host have one key (default key),
	// so an ambiguity marker stops both from resuming (ambiguous.go).
	MsgAmbiguous = "Two server instances under this host were launched identically (same program, arguments, working directory and environment), so neither resumes a session: give each server entry its own MCP_RESUME_INSTANCE"
	// Ours: MsgAmbiguous for a declared key.
	MsgAmbiguousDeclared = "Two server instances under this host declared the same instance key, so neither resumes a session: give each server entry its own MCP_RESUME_INSTANCE"
	// Ours, debug: the MCP host was identified.
	MsgHostIdentified = "MCP host identified"
	// Ours, info: MCP_RESUME=on vouches for the MCP host (the trust rule is
	// skipped). The host_shared warning has no fixed text: its message is
	// the procid.ErrSharedHost error, which says why and names the opt-in.
	MsgVouchedSwitch = "MCP_RESUME=on: the MCP host is trusted to act for one person without checks; if it serves several people, they can resume one another's sessions"
	// Ours, info: a non-empty MCP_RESUME_INSTANCE vouches for the MCP host.
	MsgVouchedInstance = "MCP_RESUME_INSTANCE is set: the MCP host is trusted to act for one person per instance key without checks; a fixed MCP_RESUME_INSTANCE in a gateway's configuration shares one session among all its users"
)

// Stable event names sent with each log line (hostfuncs.LogRequest.Event).
const (
	EventNotFound            = "token_not_found"
	EventCorrupted           = "token_corrupted"
	EventIdentityUnavailable = "identity_unavailable"
	EventRejected            = "token_rejected"
	EventResumed             = "session_resumed"
	EventWriteFailed         = "write_failed"
	EventDirUnusable         = "state_dir_unusable"
	EventRejectKeptNewer     = "reject_kept_newer"
	EventDeleteFailed        = "delete_failed"
	EventInstanceBusy        = "instance_busy"
	EventLockFailed          = "lock_failed"
	EventStaleRemoved        = "stale_removed"
	EventResumeOff           = "resume_off"
	EventKeyInexact          = "instance_key_inexact"
	EventKeyUnreadable       = "instance_key_unreadable"
	EventAmbiguous           = "instance_ambiguous"
	EventHostIdentified      = "host_identified"
	EventHostShared          = "host_shared"
	EventHostTrustVouched    = "host_trust_vouched"
)

// Caller invokes one host function: fn is a hostfuncs.Fn* name, req its JSON
// request; it returns the JSON response. In Wasm it is the imported function;
// natively it is a host's dispatcher (tests serve fixture answers).
type Caller func(fn string, req []byte) []byte

// Store is one server instance's view of its token file.
type Store struct {
	call Caller
	// lockSock is lockSocket's answer for the lock path lockSockFor.
	lockSock, lockSockFor string

	opened  bool
	cfg     Config
	facts   hostfuncs.Facts
	factsOK bool

	initDone bool
	enabled  bool // identity verified, state directory usable, lock held
	listDir  bool // the state directory is judged usable for list and prune
	swept    bool // stale temporary files were swept (entries)
	file     string
	lock     string

	namesDone bool
	id        procid.Identity
	idErr     error
	key       keyDone // the names' suffix and marker, or why the key is unusable

	marker    string // ambiguous-<suffix>, "" when no marker applies (no instance)
	ambiguous bool   // the marker exists: load offers nothing, store writes nothing
	listed    bool   // init's listing just showed whether the marker exists

	current string // token last loaded or stored; what reject compares against
	offered bool   // load returned a token that has not been rejected yet
	resumed bool   // "Session resumed successfully" already logged
}

// New returns a Store that reaches its host through call. Every export but
// Open fails with hostfuncs.CodeNotOpen until Open succeeds.
func New(call Caller) *Store { return &Store{call: call} }

// notOpen is the error of an export called before a successful Open.
func notOpen() *hostfuncs.Error {
	return &hostfuncs.Error{Code: hostfuncs.CodeNotOpen, Message: "call open before any other export"}
}

// Open is the open export: input is the JSON hostfuncs.OpenInput the server
// declared. It asks the host for its facts (mcp_resume_facts, once) and
// settles the app name, state directory, instance key, launchers and the
// MCP_RESUME switch with Configure; with MCP_RESUME=off it logs
// resume_off. It inspects no process and touches no file.
//
// Errors: hostfuncs.CodeInvalidApp for a bad, missing or null app name or one
// that is not a string; hostfuncs.CodeInvalidOption for input that is not the
// JSON of hostfuncs.OpenInput, an option of the wrong JSON kind (the message
// names the option, the kind expected and the kind given: hostfuncs.OptionError),
// a relative state root when the working directory is unknown
// (declaredRoot), or a second Open. On success the host fixes the answer's
// StateDir as this store's state directory for good (the confinement rule). Each message says the thing
// once; hosts show it as it is.
func (s *Store) Open(input []byte) (hostfuncs.OpenOutput, *hostfuncs.Error) {
	if s.opened {
		return hostfuncs.OpenOutput{}, &hostfuncs.Error{Code: hostfuncs.CodeInvalidOption, Message: "open was already called for this plugin instance"}
	}
	var in hostfuncs.OpenInput
	if err := in.DecodeJSON(input); err != nil {
		return hostfuncs.OpenOutput{}, OpenInputError(err, "open input is not the JSON object {\"app\", \"state_root\"?, \"instance\"?, \"launchers\"?, \"caller\"?}: ", NamesOf(input))
	}
	f, factsOK := HostFacts(s.call)
	cfg, werr := Configure(in, f, factsOK)
	if werr != nil {
		return hostfuncs.OpenOutput{}, werr
	}
	s.opened, s.cfg, s.facts, s.factsOK = true, cfg, f, factsOK
	if cfg.Off {
		s.log(hostfuncs.LevelInfo, EventResumeOff, MsgResumeOff, "")
	}
	return hostfuncs.OpenOutput{StateDir: cfg.StateDir, StateRoot: cfg.StateRoot, Resume: cfg.Resume()}, nil
}

// init resolves the host identity and prepares the state directory once per
// instance (spec 000, MCP Server Startup steps 1–2), takes the lock and
// prunes. If anything before the prune fails resume is off: nothing is read
// or written for the rest of the instance's life.
func (s *Store) init() {
	if s.initDone {
		return
	}
	s.initDone = true
	if s.cfg.Off {
		return
	}
	if s.cfg.KeyProblem != "" {
		s.log(hostfuncs.LevelWarn, EventKeyInexact, MsgKeyInexact, s.cfg.KeyProblem)
		return
	}
	if !s.resolveNames() {
		if errors.Is(s.idErr, procid.ErrSharedHost) {
			// The trust rule: the message says why and names the opt-in.
			s.log(hostfuncs.LevelWarn, EventHostShared, s.idErr.Error(), "")
			return
		}
		if s.key.event != "" {
			s.log(hostfuncs.LevelWarn, s.key.event, s.key.msg, s.key.detail)
			return
		}
		s.log(hostfuncs.LevelWarn, EventIdentityUnavailable, MsgIdentityUnavailable, s.idProblem())
		return
	}
	switch s.cfg.Vouch {
	case "":
	case EnvInstance:
		s.log(hostfuncs.LevelInfo, EventHostTrustVouched, MsgVouchedInstance, "")
	default:
		s.log(hostfuncs.LevelInfo, EventHostTrustVouched, MsgVouchedSwitch, "")
	}
	if s.cfg.StateDir == "" {
		s.log(hostfuncs.LevelWarn, EventDirUnusable, MsgDirUnusable, s.cfg.Problem)
		return
	}
	if _, werr := s.prepareDir(true); werr != nil {
		s.log(hostfuncs.LevelWarn, EventDirUnusable, MsgDirUnusable, werr.Message)
		return
	}
	s.listDir = true
	// The directory is judged: sweep now, whether or not the lock is free;
	// the same listing serves the prune below.
	all, lerr := s.entries()
	// A key marked ambiguous resumes nothing, whichever instance runs
	// (ambiguous.go); its other files are still pruned.
	if s.marker != "" && lerr == nil && hasEntry(all, s.marker) {
		s.setAmbiguous(false)
		s.prune(all)
		return
	}
	s.listed = lerr == nil
	// Instances that cannot be told apart share one name: the first owns
	// it for its lifetime (several server instances under one host; spec
	// 000's Known Limitation). With an instance key, the second marks the
	// key ambiguous, so that neither resumes, now or after a restart; with
	// none (MCP_RESUME_INSTANCE=-, one session per host by choice) it runs
	// without resume. On Linux every host also binds the abstract socket
	// named by lockSocket, so that Go, Python and Node servers exclude one
	// another.
	sock, serr := s.lockSocket()
	if serr != nil {
		s.log(hostfuncs.LevelWarn, EventLockFailed, MsgLockFailed, serr.Error())
		return
	}
	var lk hostfuncs.Empty
	if err := s.invoke(hostfuncs.FnLock, hostfuncs.LockRequest{Name: s.lock, Socket: sock}, &lk, &lk.Error); errCode(err) == hostfuncs.CodeBusy {
		if s.marker != "" {
			s.setAmbiguous(true)
			return
		}
		s.log(hostfuncs.LevelWarn, EventInstanceBusy, MsgInstanceBusy, "set a distinct instance (host option or MCP_RESUME_INSTANCE) to resume each instance separately")
		return
	} else if err != nil {
		s.log(hostfuncs.LevelWarn, EventLockFailed, MsgLockFailed, err.Error())
		return
	}
	s.enabled = true
	if lerr == nil {
		s.prune(all)
	}
}

// idProblem says why the identity is unavailable.
func (s *Store) idProblem() string {
	if s.idErr != nil {
		return s.idErr.Error()
	}
	return s.cfg.Problem
}

// inspect is the procid.Inspector over mcp_resume_inspect. The request's
// encoder writes "fd" exactly for fstat and peer, fd 0 included
// (hostfuncs.InspectRequest.EncodeJSON).
func (s *Store) inspect(ops []hostfuncs.InspectOp) ([]hostfuncs.InspectResult, error) {
	if ops == nil {
		ops = []hostfuncs.InspectOp{}
	}
	var r hostfuncs.InspectResponse
	if err := s.invoke(hostfuncs.FnInspect, hostfuncs.InspectRequest{Ops: ops}, &r, &r.Error); err != nil {
		return nil, err
	}
	return r.Results, nil
}

// resolveNames identifies the MCP host once (procid.Resolve), applies the
// trust rule to it (procid.CheckTrust) unless the environment vouches for
// it (Config.Vouch), and derives the token and lock file names from it. It
// touches no file and logs nothing above debug. It reports false when
// resume is off, the identity is unavailable or the host may act for
// several people (s.idProblem says why; s.id keeps the chain read).
func (s *Store) resolveNames() bool {
	if s.namesDone {
		return s.file != ""
	}
	s.namesDone = true
	if s.cfg.Off || !s.factsOK || s.cfg.KeyProblem != "" || s.cfg.Problem != "" && s.cfg.StateDir != "" {
		return false
	}
	s.id, s.idErr = procid.Resolve(s.facts, s.cfg.Launchers, s.inspect)
	if s.idErr != nil {
		return false
	}
	if s.id.Trust, s.idErr = trust(s.cfg, s.facts, s.id, s.inspect); s.idErr != nil {
		return false
	}
	if s.key = s.keyFor(hostfuncs.PIDSelf, s.id.PID, s.facts.Cwd, true); s.key.event != "" {
		return false
	}
	suffix := s.key.suffix
	s.marker = s.key.marker
	s.file = FileName(s.id.PID, s.id.StartTime, suffix)
	s.lock = lockName(s.id.PID, s.id.StartTime, suffix)
	s.log(hostfuncs.LevelDebug, EventHostIdentified, MsgHostIdentified,
		"pid "+strconv.Itoa(s.id.PID)+", start time "+s.id.StartTime+", stdio: "+s.id.Stdio+", trust: "+s.id.Trust+"; chain: "+ChainText(s.id.WireChain(true)))
	return true
}

// trust is the trust verdict of the resolved identity id: "vouched: ..."
// when cfg.Vouch names a switch (the rule is skipped, nothing is read),
// else procid.CheckTrust's verdict or its error (wrapping
// procid.ErrSharedHost).
func trust(cfg Config, f hostfuncs.Facts, id procid.Identity, in procid.Inspector) (string, error) {
	if cfg.Vouch != "" {
		return "vouched: " + cfg.Vouch + " (the host was not checked)", nil
	}
	return procid.CheckTrust(f, id, in)
}

// Names is the names export: the token and lock file names of this
// instance, from the identity alone, without touching any file; both ""
// (an empty object) when resume is off or the identity is unavailable. Hosts
// whose lock cannot be taken inside a synchronous host function (Node) take
// it ahead of the first load, store or reject. Error: hostfuncs.CodeNotOpen.
func (s *Store) Names() (hostfuncs.NamesOutput, *hostfuncs.Error) {
	if !s.opened {
		return hostfuncs.NamesOutput{}, notOpen()
	}
	if !s.resolveNames() {
		return hostfuncs.NamesOutput{}, nil
	}
	sock, _ := s.lockSocket()
	return hostfuncs.NamesOutput{Token: s.file, Lock: s.lock, LockSocket: sock}, nil
}

// lockSocket is the abstract socket of this instance's lock (LockSocket),
// "" before the names are known. It is sent on every system; hosts bind it
// on Linux only (macOS has no abstract sockets, and its hosts all take flock,
// which O_EXLOCK is there). The host's digest is asked once and kept; its
// failure is the error.
func (s *Store) lockSocket() (string, *hostfuncs.Error) {
	if s.lock == "" || s.cfg.StateDir == "" {
		return "", nil
	}
	if for_ := s.cfg.StateDir + "/" + s.lock; s.lockSockFor != for_ {
		sock, err := LockSocket(s.call, s.cfg.StateDir, s.lock)
		if err != nil {
			return "", err
		}
		s.lockSock, s.lockSockFor = sock, for_
	}
	return s.lockSock, nil
}

// Load is the load export: the stored token and true, or "" and false when
// there is none to offer: no file, resume off, a key marked ambiguous
// (ambiguous.go), or a corrupt file (which it deletes). Spec 000, MCP Server Startup steps 3–5, and Token File
// Corrupted. Error: hostfuncs.CodeNotOpen.
func (s *Store) Load() (string, bool, *hostfuncs.Error) {
	if !s.opened {
		return "", false, notOpen()
	}
	s.init()
	if !s.enabled || s.checkAmbiguous() {
		return "", false, nil
	}
	var r hostfuncs.ReadResponse
	err := s.invoke(hostfuncs.FnRead, hostfuncs.ReadRequest{Name: s.file, Limit: MaxTokenBytes + 1}, &r, &r.Error)
	switch {
	case errCode(err) == hostfuncs.CodeNotFound:
		s.log(hostfuncs.LevelInfo, EventNotFound, MsgNotFound, "")
		return "", false, nil
	case err != nil:
		s.log(hostfuncs.LevelWarn, EventCorrupted, MsgCorrupted, "read failed: "+err.Error())
		s.remove()
		return "", false, nil
	}
	if problem := CheckToken(r.Data); problem != "" {
		s.log(hostfuncs.LevelWarn, EventCorrupted, MsgCorrupted, problem)
		s.remove()
		return "", false, nil
	}
	s.current = string(r.Data)
	s.offered = true
	return s.current, true, nil
}

// Store is the store export: it persists token, the one the broker just
// issued (spec 000, Token Persistence). A token that is not 1–4096 bytes of
// visible ASCII fails with hostfuncs.CodeInvalidToken (even when resume is off, so
// a server cannot tell the difference), its message saying what is wrong;
// every other failure is logged as "Failed to write token file: <error>"
// and not returned, since a lost token only costs the next resume. If the
// previous Load offered a token that was not rejected, it logs "Session
// resumed successfully" once. While the key is marked ambiguous it writes
// nothing and deletes the token file (ambiguous.go). Errors:
// hostfuncs.CodeNotOpen, hostfuncs.CodeInvalidToken.
func (s *Store) Store(token string) *hostfuncs.Error {
	if !s.opened {
		return notOpen()
	}
	if problem := CheckToken([]byte(token)); problem != "" {
		return &hostfuncs.Error{Code: hostfuncs.CodeInvalidToken, Message: "invalid token: " + problem + "; pass the token exactly as the broker issued it"}
	}
	s.init()
	if s.ambiguous || s.enabled && s.checkAmbiguous() {
		// No token for an ambiguous key, and none left behind: the
		// instance that held the lock stops too.
		s.remove()
		return nil
	}
	if !s.enabled {
		return nil
	}
	if s.offered && !s.resumed {
		s.resumed = true
		s.log(hostfuncs.LevelInfo, EventResumed, MsgResumed, "")
	}
	s.offered = false
	if err := s.write(s.file, []byte(token)); err != nil {
		s.log(hostfuncs.LevelError, EventWriteFailed, MsgWriteFailedPrefix+err.Error(), "")
		return nil
	}
	s.current = token
	return nil
}

// Reject is the reject export: it records that the broker refused the
// token last loaded or stored. It logs "Broker rejected resume token,
// starting fresh session" and deletes the token file, but only if the file
// still holds that token, so a newer token written meanwhile by another
// instance survives (spec 000, Broker Rejects Token; the reconnection race:
// a delayed reject deleting a session resumed meanwhile). Without a current token it does nothing. Error: hostfuncs.CodeNotOpen.
func (s *Store) Reject() *hostfuncs.Error {
	if !s.opened {
		return notOpen()
	}
	s.init()
	if !s.enabled || s.current == "" || s.ambiguous {
		return nil
	}
	s.log(hostfuncs.LevelInfo, EventRejected, MsgRejected, "")
	rejected := s.current
	s.current, s.offered = "", false
	var r hostfuncs.ReadResponse
	err := s.invoke(hostfuncs.FnRead, hostfuncs.ReadRequest{Name: s.file, Limit: MaxTokenBytes + 1}, &r, &r.Error)
	switch {
	case errCode(err) == hostfuncs.CodeNotFound:
		return nil
	case err == nil && string(r.Data) != rejected && CheckToken(r.Data) == "":
		s.log(hostfuncs.LevelInfo, EventRejectKeptNewer, MsgRejectKeptNewer, "")
		return nil
	}
	s.remove()
	return nil
}

// remove deletes the token file, logging (not returning) a failure.
func (s *Store) remove() {
	var e hostfuncs.Empty
	err := s.invoke(hostfuncs.FnRemove, hostfuncs.NameRequest{Name: s.file}, &e, &e.Error)
	if err != nil && errCode(err) != hostfuncs.CodeNotFound {
		s.log(hostfuncs.LevelWarn, EventDeleteFailed, MsgDeleteFailedPrefix+err.Error(), "")
	}
}

// log sends one line to the host's logger; a failing logger is ignored.
// Messages that name the instance option (key.go's fixes) say "the
// instance option"; the caller's name for it replaces "instance" there.
func (s *Store) log(level, event, msg, detail string) {
	if opt := s.cfg.Names.Option("instance"); opt != "instance" {
		msg = strings.ReplaceAll(msg, "the instance option", "the "+opt+" option")
		detail = strings.ReplaceAll(detail, "the instance option", "the "+opt+" option")
	}
	Log(s.call, level, event, msg, detail)
}

// errCode returns the code of err when it is a host function's error (a
// *hostfuncs.Error, as invoke returns them, unwrapped), else "". A type assertion
// rather than errors.As keeps reflection out of the plugin.
func errCode(err error) string {
	if werr, ok := err.(*hostfuncs.Error); ok {
		return werr.Code
	}
	return ""
}

// request is a host-function request of hostfuncs: it encodes itself
// as JSON without reflection.
type request interface{ EncodeJSON() ([]byte, error) }

// response is a host-function response of hostfuncs: it decodes itself
// from JSON without reflection.
type response interface{ DecodeJSON(b []byte) error }

// invoke calls fn with req encoded as JSON and decodes the response into
// resp. It returns the host's *hostfuncs.Error if the response carries one (read
// through errField, which points into resp), or a hostfuncs.CodeIO error for a
// response that is not JSON (a host function that failed without
// answering: "cannot tell").
func (s *Store) invoke(fn string, req request, resp response, errField **hostfuncs.Error) error {
	b, err := req.EncodeJSON()
	if err != nil {
		return err
	}
	out := s.call(fn, hostfuncs.Pad8(b))
	if err := resp.DecodeJSON(out); err != nil {
		return &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: "host function " + fn + " returned a malformed response: " + err.Error()}
	}
	if *errField != nil {
		return *errField
	}
	return nil
}
