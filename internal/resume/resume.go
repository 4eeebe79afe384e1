// Package resume is the resume-token store of spec 000 ("MCP Server Session
// Resume Specification v1"), written against the host-function contract of
// hostfuncs/README.md so that one implementation serves every host.
//
// It is plain Go: the plugin (package main next door) compiles it to Wasm and
// forwards its exports here; tests run it natively against the Go host
// functions. It never touches the operating system itself: identity, files
// and logging all go through a Caller.
//
// A Store is not safe for concurrent use; hosts serialise calls into the
// plugin instance that owns it.
package resume

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/internal/wire"
)

// MaxTokenBytes is the largest token the store accepts, in bytes.
const MaxTokenBytes = 4096

// FilePrefix starts every token file name: token-<parent_pid>-<parent_start_time>
// (spec 000, Token File Naming Strategy), followed by -<instance> when the
// host tells server instances apart.
const FilePrefix = "token-"

// LockPrefix starts the name of the lock file that the instance owning a
// token file holds for its lifetime: lock-<parent_pid>-<parent_start_time>[-<instance>].
const LockPrefix = "lock-"

// MaxAge is how old (by modification time) a token or lock file may grow
// when its host's liveness cannot be checked, before Prune removes it. A file
// whose host is alive is never removed, whatever its age.
const MaxAge = 30 * 24 * 60 * 60 // seconds

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
	// Ours: reject found a different (newer) token in the file and kept it (seed 004).
	MsgRejectKeptNewer = "Token file holds a newer token, leaving it in place"
	// Ours: deleting a corrupted or rejected token file failed.
	MsgDeleteFailedPrefix = "Failed to delete token file: "
	// Ours: another instance under the same host, launched the same way, owns the token file.
	MsgInstanceBusy = "Another server instance under this host holds the token file, session resume disabled for this instance"
	// Ours: the lock could not be taken for another reason (read-only directory, ...).
	MsgLockFailed = "Could not lock the token file, session resume disabled for this instance"
	// Ours: a file of a host that is gone (or too old to check) was removed.
	MsgStaleRemoved = "Removed stale token file"
)

// Stable event names sent with each log line (wire.LogRequest.Event).
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
)

// ErrInvalidToken is returned by Store.Store when the token is not 1–4096
// bytes of visible ASCII (0x21–0x7E). Nothing is written.
var ErrInvalidToken = errors.New("invalid token")

// Caller invokes one host function: fn is a wire.Fn* name, req its JSON
// request; it returns the JSON response. In Wasm it is the imported function;
// natively it is hostfuncs.Funcs.Call.
type Caller func(fn string, req []byte) []byte

// Store is one server instance's view of its token file.
type Store struct {
	call Caller

	initDone bool
	enabled  bool   // identity verified, state directory usable, lock held
	file     string // token-<pid>-<start_time>[-<instance>]
	lock     string // lock-<pid>-<start_time>[-<instance>]

	namesDone bool   // resolveNames ran
	idProblem string // why the identity is unusable, if it is

	current string // token last loaded or stored; what reject compares against
	offered bool   // load returned a token that has not been rejected yet
	resumed bool   // "Session resumed successfully" already logged
}

// New returns a Store that reaches its host through call.
func New(call Caller) *Store { return &Store{call: call} }

// init resolves the host identity and prepares the state directory once per
// instance (spec 000, MCP Server Startup steps 1–2). If either fails resume
// is off: nothing is read or written for the rest of the instance's life.
func (s *Store) init() {
	if s.initDone {
		return
	}
	s.initDone = true
	if !s.resolveNames() {
		s.log(wire.LevelWarn, EventIdentityUnavailable, MsgIdentityUnavailable, s.idProblem)
		return
	}
	var prep wire.Empty
	if err := s.invoke(wire.FnPrepareDir, struct{}{}, &prep, &prep.Error); err != nil {
		s.log(wire.LevelWarn, EventDirUnusable, MsgDirUnusable, err.Error())
		return
	}
	// Instances that cannot be told apart share one name: the first owns
	// it for its lifetime, the others run without resume (issue: several
	// server instances under one host; spec 000's Known Limitation).
	var lk wire.Empty
	var werr *wire.Error
	if err := s.invoke(wire.FnLock, wire.NameRequest{Name: s.lock}, &lk, &lk.Error); errors.As(err, &werr) && werr.Code == wire.CodeBusy {
		s.log(wire.LevelWarn, EventInstanceBusy, MsgInstanceBusy, "set a distinct instance (host option or MCP_RESUME_INSTANCE) to resume each instance separately")
		return
	} else if err != nil {
		s.log(wire.LevelWarn, EventLockFailed, MsgLockFailed, err.Error())
		return
	}
	s.enabled = true
	s.Prune()
}

// resolveNames asks the host for its identity once and derives the token and
// lock file names from it. It touches no file. It reports false, with
// s.idProblem set, when the identity is unavailable or unusable.
func (s *Store) resolveNames() bool {
	if s.namesDone {
		return s.file != ""
	}
	s.namesDone = true
	var id wire.IdentityResponse
	if err := s.invoke(wire.FnIdentity, struct{}{}, &id, &id.Error); err != nil {
		s.idProblem = err.Error()
		return false
	}
	if id.PID <= 1 || !wire.ValidStartTime(id.StartTime) || len(id.Instance) > 1<<16 {
		s.idProblem = fmt.Sprintf("host returned an unusable identity (pid %d, start time %q)", id.PID, id.StartTime)
		return false
	}
	suffix := InstanceSuffix(id.Instance)
	s.file = FileName(id.PID, id.StartTime, suffix)
	s.lock = lockName(id.PID, id.StartTime, suffix)
	return true
}

// Names returns the token and lock file names of this instance, from the
// host's identity, without touching any file; both "" when the identity is
// unavailable. Hosts whose lock cannot be taken inside a synchronous host
// function (Node) take it ahead of the first load, store or reject.
func (s *Store) Names() wire.NamesOutput {
	if !s.resolveNames() {
		return wire.NamesOutput{}
	}
	return wire.NamesOutput{Token: s.file, Lock: s.lock}
}

// Load returns the stored token and true, or "" and false when there is none
// to offer: no file, resume off, or a corrupt file (which it deletes).
// Spec 000, MCP Server Startup steps 3–5, and Token File Corrupted.
func (s *Store) Load() (string, bool) {
	s.init()
	if !s.enabled {
		return "", false
	}
	var r wire.ReadResponse
	err := s.invoke(wire.FnRead, wire.ReadRequest{Name: s.file, Limit: MaxTokenBytes + 1}, &r, &r.Error)
	var werr *wire.Error
	switch {
	case errors.As(err, &werr) && werr.Code == wire.CodeNotFound:
		s.log(wire.LevelInfo, EventNotFound, MsgNotFound, "")
		return "", false
	case err != nil:
		s.log(wire.LevelWarn, EventCorrupted, MsgCorrupted, "read failed: "+err.Error())
		s.remove()
		return "", false
	}
	if problem := CheckToken(r.Data); problem != "" {
		s.log(wire.LevelWarn, EventCorrupted, MsgCorrupted, problem)
		s.remove()
		return "", false
	}
	s.current = string(r.Data)
	s.offered = true
	return s.current, true
}

// Store persists token, the one the broker just issued (spec 000, Token
// Persistence). It returns ErrInvalidToken (wrapped, saying what is wrong)
// for a token that is not 1–4096 bytes of visible ASCII; every other failure
// is logged as "Failed to write token file: <error>" and not returned, since
// a lost token only costs the next resume. If the previous Load offered a
// token that was not rejected, it logs "Session resumed successfully".
func (s *Store) Store(token string) error {
	if problem := CheckToken([]byte(token)); problem != "" {
		return fmt.Errorf("%w: %s; pass the token exactly as the broker issued it", ErrInvalidToken, problem)
	}
	s.init()
	if !s.enabled {
		return nil
	}
	if s.offered && !s.resumed {
		s.resumed = true
		s.log(wire.LevelInfo, EventResumed, MsgResumed, "")
	}
	s.offered = false
	var w wire.Empty
	if err := s.invoke(wire.FnWrite, wire.WriteRequest{Name: s.file, Data: []byte(token)}, &w, &w.Error); err != nil {
		s.log(wire.LevelError, EventWriteFailed, MsgWriteFailedPrefix+err.Error(), "")
		return nil
	}
	s.current = token
	return nil
}

// Reject records that the broker refused the token last loaded or stored:
// it logs "Broker rejected resume token, starting fresh session" and deletes
// the token file, but only if the file still holds that token, so a newer
// token written meanwhile by another instance survives (spec 000, Broker
// Rejects Token; seed 004, reconnection race). Without a current token it
// does nothing.
func (s *Store) Reject() {
	s.init()
	if !s.enabled || s.current == "" {
		return
	}
	s.log(wire.LevelInfo, EventRejected, MsgRejected, "")
	rejected := s.current
	s.current, s.offered = "", false
	var r wire.ReadResponse
	err := s.invoke(wire.FnRead, wire.ReadRequest{Name: s.file, Limit: MaxTokenBytes + 1}, &r, &r.Error)
	var werr *wire.Error
	switch {
	case errors.As(err, &werr) && werr.Code == wire.CodeNotFound:
		return
	case err == nil && string(r.Data) != rejected && CheckToken(r.Data) == "":
		s.log(wire.LevelInfo, EventRejectKeptNewer, MsgRejectKeptNewer, "")
		return
	}
	s.remove()
}

// List reports every token file in the state directory whose name parses as
// token-<pid>-<start_time>. It needs no identity and never reads a token.
func (s *Store) List() (wire.ListOutput, error) {
	var r wire.ListResponse
	out := wire.ListOutput{Files: []wire.ListedFile{}}
	err := s.invoke(wire.FnList, wire.ListRequest{Prefix: FilePrefix}, &r, &r.Error)
	var werr *wire.Error
	if errors.As(err, &werr) && werr.Code == wire.CodeNotFound {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	for _, name := range r.Names {
		if n, ok := ParseName(FilePrefix, name); ok {
			out.Files = append(out.Files, wire.ListedFile{Name: name, PID: n.PID, StartTime: n.StartTime, Instance: n.Instance})
		}
	}
	return out, nil
}

// Prune removes the token and lock files of hosts that are gone: the pid is
// absent, or names another process, or belongs to another boot. A token file
// whose host cannot be checked is removed only once older than MaxAge (a lock
// file never is); a file whose host is alive is never removed, and neither
// are this instance's own.
// It needs no identity, so `mcp-resume prune` can run it for any state
// directory. Failures are skipped: when unsure, keep.
func (s *Store) Prune() wire.PruneOutput {
	out := wire.PruneOutput{Removed: []string{}}
	for _, prefix := range []string{FilePrefix, LockPrefix} {
		var r wire.ListResponse
		if err := s.invoke(wire.FnList, wire.ListRequest{Prefix: prefix}, &r, &r.Error); err != nil {
			continue
		}
		for _, name := range r.Names {
			n, ok := ParseName(prefix, name)
			if !ok || name == s.file || name == s.lock {
				continue
			}
			var p wire.ProbeResponse
			if err := s.invoke(wire.FnProbe, wire.ProbeRequest{Name: name, PID: n.PID, StartTime: n.StartTime}, &p, &p.Error); err != nil {
				continue
			}
			// Lock files go only with a host that is provably gone: their
			// modification time never moves, so age says nothing about
			// whether an instance still holds one, and deleting a held lock
			// file would let a third instance lock a fresh one. A gone host's
			// names can never be computed again, so its lock is dead for sure.
			aged := p.Host == wire.HostUnknown && p.AgeSeconds > MaxAge && prefix == FilePrefix
			if p.Host == wire.HostGone || aged {
				var e wire.Empty
				if err := s.invoke(wire.FnRemove, wire.NameRequest{Name: name}, &e, &e.Error); err == nil {
					out.Removed = append(out.Removed, name)
					s.log(wire.LevelInfo, EventStaleRemoved, MsgStaleRemoved, name+": host "+p.Host)
				}
			}
		}
	}
	return out
}

// remove deletes the token file, logging (not returning) a failure.
func (s *Store) remove() {
	var e wire.Empty
	err := s.invoke(wire.FnRemove, wire.NameRequest{Name: s.file}, &e, &e.Error)
	var werr *wire.Error
	if err != nil && !(errors.As(err, &werr) && werr.Code == wire.CodeNotFound) {
		s.log(wire.LevelWarn, EventDeleteFailed, MsgDeleteFailedPrefix+err.Error(), "")
	}
}

// log sends one line to the host's logger; a failing logger is ignored.
func (s *Store) log(level, event, msg, detail string) {
	req, _ := json.Marshal(wire.LogRequest{Level: level, Event: event, Message: msg, Detail: detail})
	s.call(wire.FnLog, wire.Pad8(req))
}

// invoke calls fn with req encoded as JSON and decodes the response into
// resp. It returns the host's *wire.Error if the response carries one (read
// through errField, which points into resp), or an error for a response that
// is not JSON.
func (s *Store) invoke(fn string, req any, resp any, errField **wire.Error) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	out := s.call(fn, wire.Pad8(b))
	if err := json.Unmarshal(out, resp); err != nil {
		return &wire.Error{Code: wire.CodeIO, Message: fmt.Sprintf("host function %s returned a malformed response: %v", fn, err)}
	}
	if *errField != nil {
		return *errField
	}
	return nil
}

// CheckToken returns "" if b is a valid token (1–MaxTokenBytes bytes, each
// 0x21–0x7E), else a description of the first problem that never quotes the
// token itself. Anything else found in a token file is corrupt (spec 000,
// Token File Corrupted).
func CheckToken(b []byte) string {
	switch {
	case len(b) == 0:
		return "token is empty"
	case len(b) > MaxTokenBytes:
		return fmt.Sprintf("token is longer than %d bytes", MaxTokenBytes)
	}
	for i, c := range b {
		if c < 0x21 || c > 0x7e {
			return fmt.Sprintf("token has byte 0x%02x at offset %d; only visible ASCII (0x21-0x7E) is allowed", c, i)
		}
	}
	return ""
}

// InstanceSuffix returns the file-name suffix for an instance key: "" for
// "", else the first 16 hex digits of its SHA-256 (the key may hold a
// server's arguments, so only a digest reaches the file system).
func InstanceSuffix(instance string) string {
	if instance == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(instance))
	return hex.EncodeToString(sum[:8])
}

// FileName returns token-<pid>-<startTime> (spec 000, Token File Naming
// Strategy), with -<suffix> appended when suffix (from InstanceSuffix) is set.
func FileName(pid int, startTime, suffix string) string {
	return name(FilePrefix, pid, startTime, suffix)
}

func lockName(pid int, startTime, suffix string) string {
	return name(LockPrefix, pid, startTime, suffix)
}

func name(prefix string, pid int, startTime, suffix string) string {
	n := prefix + strconv.Itoa(pid) + "-" + startTime
	if suffix != "" {
		n += "-" + suffix
	}
	return n
}

// Name is a token or lock file name taken apart.
type Name struct {
	PID       int
	StartTime string
	Instance  string // 16 hex digits, or "" when the host did not tell instances apart
}

// ParseName splits a name made by FileName (prefix FilePrefix) or for a lock
// (LockPrefix) back into its parts; ok is false for any other name.
func ParseName(prefix, name string) (Name, bool) {
	rest, found := strings.CutPrefix(name, prefix)
	if !found {
		return Name{}, false
	}
	p, rest, found := strings.Cut(rest, "-")
	if !found {
		return Name{}, false
	}
	start, inst, _ := strings.Cut(rest, "-")
	if !wire.ValidStartTime(start) || (inst != "" || strings.HasSuffix(rest, "-")) && !isHex16(inst) {
		return Name{}, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 1 || strconv.Itoa(pid) != p {
		return Name{}, false
	}
	return Name{PID: pid, StartTime: start, Instance: inst}, true
}

func isHex16(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}
