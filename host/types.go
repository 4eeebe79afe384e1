package host

import (
	"encoding/json"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// The reports of Store.List, Store.Prune, Store.Whoami, Handles.List and
// Handles.GC. They are this package's own types, with durations as
// time.Duration; the plugin answers them as JSON (hostfuncs/README.md,
// "Plugin exports"), and each type marshals to and from exactly that JSON
// (MarshalJSON, UnmarshalJSON), the same in every host language, which
// `mcp-resume` hands to the plugin's render export unchanged. Host fields
// and the constants they hold (hostfuncs.HostAlive, HostGone, HostUnknown;
// hostfuncs.ReasonHostGone, ReasonAged) describe the MCP host, not this
// package.

// TokenFile is one token file of the state directory as Store.List
// reports it (never its token).
type TokenFile struct {
	// Name is the file name, token-<pid>-<start_time>[-<instance>].
	Name string
	// PID and StartTime identify the MCP host the file belongs to, as
	// parsed from Name (StartTime in the format of the procid package,
	// "Start time": a boot-relative clock reading, not a wall-clock time).
	PID       int
	StartTime string
	// Instance is the 16-hex-digit instance suffix of the name, "" for none.
	Instance string
	// Host says whether that MCP host is still running:
	// hostfuncs.HostAlive, HostGone, HostUnknown (HostAmbiguous for an
	// ambiguity marker).
	Host string
	// Age is the time since the file was last written, in whole seconds
	// (negative when the clock moved back).
	Age time.Duration
}

func tokenFileFrom(w hostfuncs.TokenFile) TokenFile {
	return TokenFile{Name: w.Name, PID: w.PID, StartTime: w.StartTime, Instance: w.Instance, Host: w.Host, Age: time.Duration(w.AgeSeconds) * time.Second}
}

func (f TokenFile) wire() hostfuncs.TokenFile {
	return hostfuncs.TokenFile{Name: f.Name, PID: f.PID, StartTime: f.StartTime, Instance: f.Instance, Host: f.Host, AgeSeconds: int64(f.Age / time.Second)}
}

// MarshalJSON writes f as the plugin's list export does.
func (f TokenFile) MarshalJSON() ([]byte, error) { return json.Marshal(f.wire()) }

// UnmarshalJSON reads f from the plugin's list export JSON.
func (f *TokenFile) UnmarshalJSON(b []byte) error {
	var w hostfuncs.TokenFile
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*f = tokenFileFrom(w)
	return nil
}

// PrunedFile is one file Store.Prune removed, and why.
type PrunedFile struct {
	// Name is the file name (a token, lock or marker file).
	Name string
	// Reason is hostfuncs.ReasonHostGone, ReasonAged or ReasonUnseen.
	Reason string
	// Host is the liveness of the MCP host the file named
	// (hostfuncs.HostGone, HostUnknown, HostAmbiguous).
	Host string
}

// MarshalJSON writes p as the plugin's prune export does.
func (p PrunedFile) MarshalJSON() ([]byte, error) {
	return json.Marshal(hostfuncs.PrunedFile{Name: p.Name, Reason: p.Reason, Host: p.Host})
}

// UnmarshalJSON reads p from the plugin's prune export JSON.
func (p *PrunedFile) UnmarshalJSON(b []byte) error {
	var w hostfuncs.PrunedFile
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = PrunedFile{Name: w.Name, Reason: w.Reason, Host: w.Host}
	return nil
}

// Process is one process of the ancestor chain of an Identity, nearest
// the server first.
type Process struct {
	// PID is the process id; PPID its parent's, 0 outside this PID
	// namespace.
	PID, PPID int
	// Name is the kernel's short name (Linux comm, at most 15 bytes; macOS
	// p_comm, at most 16).
	Name string
	// Args is the argument vector, empty when it cannot be read.
	Args []string
	// StartTime is the process's start time (procid, "Start time").
	StartTime string
	// Role is "launcher" (skipped by the walk) or "host" (the MCP host).
	Role string
}

// Identity is the MCP host this process resolves, how, and the names it
// would use, as Store.Whoami reports it.
type Identity struct {
	// PID and StartTime identify the MCP host; zero when Error is set.
	PID       int
	StartTime string
	// Stdio says how the MCP host's hold on the server's stdin and stdout
	// was checked ("verified: ...", "not checked: ...").
	Stdio string
	// Trust is the trust rule's verdict on the MCP host; "" when Error is
	// set.
	Trust string
	// InstanceSuffix is the 16-hex-digit instance part of the names, ""
	// for none.
	InstanceSuffix string
	// TokenFile and LockFile are the names this instance would use; ""
	// when Error is set.
	TokenFile, LockFile string
	// MarkerFile is the ambiguity marker that would stop this instance
	// from resuming, "" when none applies.
	MarkerFile string
	// StateDir is the absolute state directory.
	StateDir string
	// Chain is the ancestor chain walked, nearest first; the MCP host, when
	// resolved, is last with Role "host".
	Chain []Process
	// Error says why the identity is unavailable (resume is then off), ""
	// when it is available.
	Error string
}

func identityFrom(w hostfuncs.WhoamiOutput) Identity {
	id := Identity{PID: w.PID, StartTime: w.StartTime, Stdio: w.Stdio, Trust: w.Trust, InstanceSuffix: w.InstanceSuffix,
		TokenFile: w.TokenFile, LockFile: w.LockFile, MarkerFile: w.MarkerFile, StateDir: w.StateDir, Error: w.Error}
	for _, p := range w.Chain {
		id.Chain = append(id.Chain, Process{PID: p.PID, PPID: p.PPID, Name: p.Name, Args: p.Args, StartTime: p.StartTime, Role: p.Role})
	}
	return id
}

// MarshalJSON writes id as the plugin's whoami export does.
func (id Identity) MarshalJSON() ([]byte, error) {
	w := hostfuncs.WhoamiOutput{PID: id.PID, StartTime: id.StartTime, Stdio: id.Stdio, Trust: id.Trust, InstanceSuffix: id.InstanceSuffix,
		TokenFile: id.TokenFile, LockFile: id.LockFile, MarkerFile: id.MarkerFile, StateDir: id.StateDir, Error: id.Error, Chain: []hostfuncs.Process{}}
	for _, p := range id.Chain {
		args := p.Args
		if args == nil {
			args = []string{}
		}
		w.Chain = append(w.Chain, hostfuncs.Process{PID: p.PID, PPID: p.PPID, Name: p.Name, Args: args, StartTime: p.StartTime, Role: p.Role})
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads id from the plugin's whoami export JSON.
func (id *Identity) UnmarshalJSON(b []byte) error {
	var w hostfuncs.WhoamiOutput
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*id = identityFrom(w)
	return nil
}

// HandleInfo is one entry of a HandleList: never a value, a handle or a
// principal.
type HandleInfo struct {
	// Key is the first 12 hex digits of the handle's key hash (the name
	// log lines use).
	Key string
	// State is hostfuncs.HandleLive, HandleExpiredIdle,
	// HandleExpiredMaxAge or HandleEvicted.
	State string
	// Generation and Size (bytes of the value) are set for a live handle
	// only.
	Generation, Size int64
	// Age is the time since creation; Idle since the last use (for a
	// tombstone: since it died). Millisecond precision.
	Age, Idle time.Duration
}

// HandleList is what Handles.List reports: never a value, a handle or a
// principal.
type HandleList struct {
	// Handles are the entries, live handles and tombstones.
	Handles []HandleInfo
	// Live and Tombstones count them.
	Live, Tombstones int64
	// Shards is the shard count in effect.
	Shards int64
	// Bytes is the total size of the live values.
	Bytes int64
}

func handleListFrom(w hostfuncs.HandleListOutput) HandleList {
	l := HandleList{Live: w.Live, Tombstones: w.Tombstones, Shards: w.Shards, Bytes: w.Bytes}
	for _, e := range w.Handles {
		l.Handles = append(l.Handles, HandleInfo{Key: e.Key, State: e.State, Generation: e.Generation, Size: e.Size, Age: msDuration(e.AgeMS), Idle: msDuration(e.IdleMS)})
	}
	return l
}

// MarshalJSON writes l as the plugin's handle_list export does.
func (l HandleList) MarshalJSON() ([]byte, error) {
	w := hostfuncs.HandleListOutput{Live: l.Live, Tombstones: l.Tombstones, Shards: l.Shards, Bytes: l.Bytes, Handles: []hostfuncs.HandleEntry{}}
	for _, e := range l.Handles {
		w.Handles = append(w.Handles, hostfuncs.HandleEntry{Key: e.Key, State: e.State, Generation: e.Generation, Size: e.Size, AgeMS: e.Age.Milliseconds(), IdleMS: e.Idle.Milliseconds()})
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads l from the plugin's handle_list export JSON.
func (l *HandleList) UnmarshalJSON(b []byte) error {
	var w hostfuncs.HandleListOutput
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = handleListFrom(w)
	return nil
}

// GCResult is what Handles.GC removed, in counts, and the live handles
// left.
type GCResult struct {
	// ExpiredIdle and ExpiredMaxAge are the handles it expired, by reason.
	ExpiredIdle, ExpiredMaxAge int64
	// TombstonesDropped are tombstones past the tombstone period.
	TombstonesDropped int64
	// OrphansRemoved and TempsRemoved are orphan records and stale
	// temporary files removed.
	OrphansRemoved, TempsRemoved int64
	// Live is the number of live handles left.
	Live int64
}

func gcResultFrom(w hostfuncs.HandleGCOutput) GCResult {
	return GCResult{ExpiredIdle: w.ExpiredIdle, ExpiredMaxAge: w.ExpiredMaxAge, TombstonesDropped: w.TombstonesDropped, OrphansRemoved: w.OrphansRemoved, TempsRemoved: w.TempsRemoved, Live: w.Live}
}

// MarshalJSON writes r as the plugin's handle_gc export does.
func (r GCResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(hostfuncs.HandleGCOutput{ExpiredIdle: r.ExpiredIdle, ExpiredMaxAge: r.ExpiredMaxAge, TombstonesDropped: r.TombstonesDropped, OrphansRemoved: r.OrphansRemoved, TempsRemoved: r.TempsRemoved, Live: r.Live})
}

// UnmarshalJSON reads r from the plugin's handle_gc export JSON.
func (r *GCResult) UnmarshalJSON(b []byte) error {
	var w hostfuncs.HandleGCOutput
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = gcResultFrom(w)
	return nil
}
