package hostfuncs

// The plugin's exports, their inputs and outputs, and their error codes
// (hostfuncs/README.md, "Plugin exports"). A failed export sets its Extism
// error string to an Error as JSON.

// Exports of the plugin.
const (
	ExportABIVersion = "mcp_resume_abi_version"
	ExportOpen       = "open"
	ExportLoad       = "load"
	ExportStore      = "store"
	ExportReject     = "reject"
	ExportNames      = "names"
	ExportList       = "list"
	ExportPrune      = "prune"
	ExportWhoami     = "whoami"
	// ExportRender turns whoami, list and prune answers into what the
	// mcp-resume command line prints (plugin/internal/render); it needs no open.
	// Given the state root a CLI listed, it fails with CodeNotFound when the
	// root holds no app directory, or none of the app named.
	ExportRender = "render"
)

// Error codes of the plugin's exports (Error.Code of an export's failure).
const (
	// CodeInvalidToken: store was given a token that is not 1-4096 bytes of
	// visible ASCII (spec 000, Token File Corrupted, applied to input).
	CodeInvalidToken = "invalid_token"
	// CodeInvalidApp: open was given an app name that breaks the app rule.
	CodeInvalidApp = "invalid_app"
	// CodeInvalidOption: open was given an option it cannot use (a relative
	// state_root while facts.cwd is empty, a malformed request).
	CodeInvalidOption = "invalid_option"
	// CodeNotOpen: an export other than open ran before a successful open.
	CodeNotOpen = "not_open"
)

// OpenInput is the input of ExportOpen: what the server declared through
// its host API. Every field but App is optional; the plugin fills the
// defaults from Facts.
type OpenInput struct {
	// App is the server application name (1-64 of [A-Za-z0-9._-], starting
	// with a letter or digit).
	App string `json:"app"`
	// StateRoot overrides the state root (the directory holding one state
	// directory per app), exactly as the user gave it: the plugin makes a
	// relative one absolute against Facts.Cwd and cleans it. Empty: the
	// environment's MCP_RESUME_STATE_DIR, else the per-user default.
	StateRoot string `json:"state_root,omitempty"`
	// Instance is the declared instance key; nil means "not declared" (the
	// default applies), "" or "-" means "no instance".
	Instance *string `json:"instance,omitempty"`
	// Launchers are extra launcher names, added to the defaults and to
	// MCP_RESUME_LAUNCHERS.
	Launchers []string `json:"launchers,omitempty"`
	// Caller is the host's language, CallerGo, CallerPython or
	// CallerTypeScript: the plugin's messages then name options and
	// operations as that language does (plugin/README.md, "Names in
	// messages"). Empty: the wire names of this contract. The plugin
	// refuses any other value (invalid_option).
	Caller string `json:"caller,omitempty"`
	// AppMissing is set by DecodeJSON when the input has no app member or
	// a null one (a host's None, null or undefined), so the error can say
	// so rather than quote an empty name. Not part of the JSON.
	AppMissing bool `json:"-"`
}

// The languages a host may give as the open inputs' caller.
const (
	CallerGo         = "go"
	CallerPython     = "python"
	CallerTypeScript = "typescript"
)

// OpenMembers are the members of OpenInput that DecodeJSON reads.
var OpenMembers = []string{"app", "state_root", "instance", "launchers", "caller"}

// OpenOutput is the output of ExportOpen.
type OpenOutput struct {
	// StateDir is the absolute, clean state directory this store uses.
	// When open succeeds with it non-empty, the host fixes it as this
	// store's state directory for good (the confinement rule): the file
	// functions act on names directly inside it.
	StateDir string `json:"state_dir"`
	// StateRoot is the directory that holds every app's default state
	// directory (the default StateDir without its last element).
	StateRoot string `json:"state_root"`
	// Resume is false when resume is already known to be off (the
	// MCP_RESUME=off switch, an unsupported OS); true otherwise.
	Resume bool `json:"resume"`
}

// NamesOutput is the output of ExportNames: this instance's token and lock
// file names, both "" when the identity is unavailable.
type NamesOutput struct {
	Token string `json:"token,omitempty"`
	Lock  string `json:"lock,omitempty"`
	// LockSocket is the abstract socket of the lock (LockRequest.Socket): a
	// host on Linux that cannot bind it inside a synchronous host
	// function (Node) binds it ahead of the first load, store or reject.
	LockSocket string `json:"lock_socket,omitempty"`
}

// Liveness of the MCP host a file names (TokenFile.Host, PrunedFile.Host),
// as the plugin's liveness policy decides it (procid.Liveness). "Host" here
// is the MCP host, not the program running the plugin.
const (
	HostAlive   = "alive"   // that process is running with that start time
	HostGone    = "gone"    // no such process, or the pid now names another process or boot
	HostUnknown = "unknown" // cannot tell (permissions, another PID namespace, platform)
	// HostAmbiguous is the Host of an ambiguity marker's row in ExportList
	// and ExportPrune: ambiguous-<16 hex>, which names no host (pid 0,
	// start time ""); its Instance is the suffix of the key it marks.
	HostAmbiguous = "ambiguous"
)

// TokenFile is one token file reported by ExportList (never its token);
// package host calls it TokenFile.
type TokenFile struct {
	// Name is the file name, token-<pid>-<start_time>[-<instance>].
	Name string `json:"name"`
	// PID and StartTime identify the MCP host the file belongs to, as
	// parsed from Name (start time format: procid, "Start time").
	PID       int    `json:"pid"`
	StartTime string `json:"start_time"`
	// Instance is the 16-hex-digit instance suffix of the name, "" for none.
	Instance string `json:"instance,omitempty"`
	// Host says whether that MCP host is still running: HostAlive,
	// HostGone or HostUnknown.
	Host string `json:"host"`
	// AgeSeconds is the time since the file was last written, in whole
	// seconds (negative when the clock moved back).
	AgeSeconds int64 `json:"age_seconds"`
}

// ListOutput is the output of ExportList.
type ListOutput struct {
	Files []TokenFile `json:"files"`
}

// Reasons of PrunedFile.Reason.
const (
	ReasonHostGone = "host_gone" // its MCP host process is gone
	ReasonAged     = "aged"      // its MCP host cannot be checked and the file is older than 30 days
	ReasonUnseen   = "unseen"    // an ambiguity marker no instance has met for 30 days
)

// PrunedFile is one file ExportPrune removed, and why.
type PrunedFile struct {
	// Name is the file name (a token or lock file).
	Name string `json:"name"`
	// Reason is ReasonHostGone or ReasonAged.
	Reason string `json:"reason"`
	// Host is the liveness of the MCP host the file named (HostGone or
	// HostUnknown).
	Host string `json:"host"`
}

// PruneOutput is the output of ExportPrune.
type PruneOutput struct {
	Removed []PrunedFile `json:"removed"`
}

// Process is one process of the ancestor chain ExportWhoami reports,
// nearest the server first. (procid.Process is the policy's own view of a
// process during the walk; this is what it reports.)
type Process struct {
	PID int `json:"pid"`
	// PPID is the parent's pid; 0 outside this PID namespace.
	PPID int `json:"ppid"`
	// Name is the kernel's short name (Linux comm, at most 15 bytes; macOS
	// p_comm, at most 16).
	Name string `json:"name"`
	// Args is the argument vector, [] when it cannot be read.
	Args []string `json:"args"`
	// StartTime is the process's start time (procid, "Start time").
	StartTime string `json:"start_time"`
	// Role is "launcher" (skipped by the walk) or "host" (the MCP host).
	Role string `json:"role"`
}

// WhoamiInput is the optional input of ExportWhoami. Empty input, or a PID
// of 0, is this process; another PID asks what that running server process
// would resolve (`mcp-resume whoami --pid`). A PID of 1 or below 0, or one no
// process has, is refused with CodeInvalidOption.
type WhoamiInput struct {
	PID int `json:"pid,omitempty"`
}

// WhoamiOutput is the output of ExportWhoami: the MCP host this process
// resolves, how, and the names it would use; package host calls it
// Identity.
type WhoamiOutput struct {
	// PID and StartTime identify the MCP host; empty when Error is set.
	PID       int    `json:"pid,omitempty"`
	StartTime string `json:"start_time,omitempty"`
	// Stdio says how the MCP host's hold on the server's stdin and stdout
	// was checked ("verified: ...", "not checked: ...").
	Stdio string `json:"stdio,omitempty"`
	// Trust is the trust rule's verdict on the MCP host ("single user:
	// ...", or "vouched: MCP_RESUME=on ..." when the environment skipped
	// the rule); empty when Error is set (a host the rule refuses: Error
	// says why).
	Trust string `json:"trust,omitempty"`
	// InstanceSuffix is the 16-hex-digit instance part of the names, ""
	// for none.
	InstanceSuffix string `json:"instance_suffix,omitempty"`
	// TokenFile and LockFile are the names this instance would use; empty
	// when Error is set.
	TokenFile string `json:"token_file,omitempty"`
	LockFile  string `json:"lock_file,omitempty"`
	// MarkerFile is the ambiguity marker that would stop this instance
	// from resuming (ambiguous-<InstanceSuffix>), "" when none applies (no
	// instance key) or Error is set.
	MarkerFile string `json:"marker_file,omitempty"`
	// StateDir is the absolute state directory (the app's own, under the
	// state root).
	StateDir string `json:"state_dir"`
	// Chain is the ancestor chain walked, nearest first; the MCP host, when
	// resolved, is last with Role "host".
	Chain []Process `json:"chain"`
	// Error says why the identity is unavailable (resume is then off), ""
	// when it is available.
	Error string `json:"error,omitempty"`
}
