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
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs/wire"
)

// MaxTokenBytes is the largest token the store accepts, in bytes.
const MaxTokenBytes = 4096

// FilePrefix starts every token file name: token-<parent_pid>-<parent_start_time>
// (spec 000, Token File Naming Strategy).
const FilePrefix = "token-"

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
	enabled  bool   // identity verified and state directory usable
	file     string // token-<pid>-<start_time>

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
	var id wire.IdentityResponse
	if err := s.invoke(wire.FnIdentity, struct{}{}, &id, &id.Error); err != nil {
		s.log(wire.LevelWarn, EventIdentityUnavailable, MsgIdentityUnavailable, err.Error())
		return
	}
	if id.PID <= 1 || !wire.ValidStartTime(id.StartTime) {
		s.log(wire.LevelWarn, EventIdentityUnavailable, MsgIdentityUnavailable,
			fmt.Sprintf("host returned an unusable identity (pid %d, start time %q)", id.PID, id.StartTime))
		return
	}
	var prep wire.Empty
	if err := s.invoke(wire.FnPrepareDir, struct{}{}, &prep, &prep.Error); err != nil {
		s.log(wire.LevelWarn, EventDirUnusable, MsgDirUnusable, err.Error())
		return
	}
	s.file = FileName(id.PID, id.StartTime)
	s.enabled = true
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
		if pid, start, ok := ParseFileName(name); ok {
			out.Files = append(out.Files, wire.ListedFile{Name: name, PID: pid, StartTime: start})
		}
	}
	return out, nil
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

// FileName returns token-<pid>-<startTime> (spec 000, Token File Naming Strategy).
func FileName(pid int, startTime string) string {
	return FilePrefix + strconv.Itoa(pid) + "-" + startTime
}

// ParseFileName splits a name made by FileName back into pid and start time;
// ok is false for any other name.
func ParseFileName(name string) (pid int, startTime string, ok bool) {
	rest, found := strings.CutPrefix(name, FilePrefix)
	if !found {
		return 0, "", false
	}
	p, start, found := strings.Cut(rest, "-")
	if !found || !wire.ValidStartTime(start) {
		return 0, "", false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 1 || strconv.Itoa(pid) != p {
		return 0, "", false
	}
	return pid, start, true
}
