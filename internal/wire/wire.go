// Package wire holds the payloads that cross the boundary between the
// mcp-resume plugin and a host: the names of the host functions the plugin
// imports, the JSON documents they take and return, and the rules every host
// enforces on file names.
//
// It is the Go statement of hostfuncs/README.md, imported by the plugin (built
// for wasip1) and by the Go host alike, so it depends on the standard library
// only.
package wire

import "encoding/json"

// ABIVersion is the version of the contract between plugin and host. The
// plugin returns it from its ExportABIVersion export; a host refuses a plugin
// whose version differs from the one it implements.
const ABIVersion = "2"

// Namespace is the Wasm import module of every host function. It is the
// Extism default for user host functions.
const Namespace = "extism:host/user"

// Host functions the plugin imports. Each takes one Extism memory offset
// holding a JSON request and returns one offset holding a JSON response
// (see hostfuncs/README.md, "Calling convention").
const (
	FnIdentity   = "mcp_resume_identity"
	FnPrepareDir = "mcp_resume_prepare_dir"
	FnRead       = "mcp_resume_read"
	FnWrite      = "mcp_resume_write"
	FnRemove     = "mcp_resume_remove"
	FnList       = "mcp_resume_list"
	FnLog        = "mcp_resume_log"
	FnLock       = "mcp_resume_lock"
	FnProbe      = "mcp_resume_probe"
)

// Functions lists every host function name, in the order of the README.
var Functions = []string{FnIdentity, FnPrepareDir, FnRead, FnWrite, FnRemove, FnList, FnLog, FnLock, FnProbe}

// Exports of the plugin.
const (
	ExportABIVersion = "mcp_resume_abi_version"
	ExportLoad       = "load"
	ExportStore      = "store"
	ExportReject     = "reject"
	ExportList       = "list"
	ExportPrune      = "prune"
	ExportNames      = "names"
)

// Error codes a host function may return in Error.Code.
const (
	// CodeNotFound: the file (or the state directory, for list) does not exist.
	CodeNotFound = "not_found"
	// CodeInvalidRequest: the request was not valid JSON, or a name broke NameRule.
	CodeInvalidRequest = "invalid_request"
	// CodeUnsafe: the path is a symlink, not a regular file, or the state
	// directory has the wrong owner or mode.
	CodeUnsafe = "unsafe"
	// CodeUnavailable: the host's identity could not be verified.
	CodeUnavailable = "unavailable"
	// CodeIO: any other operating-system error (no space, read-only, permission).
	CodeIO = "io"
	// CodeBusy: another process holds the lock (FnLock).
	CodeBusy = "busy"
)

// Error is the failure half of every response. A host function never fails
// by trapping or raising: it returns {"error": {...}} (the Python SDK swallows
// exceptions raised in host functions, so errors travel in payloads).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// IdentityResponse answers FnIdentity: the MCP host process this server runs
// under, and which instance of the server this is. StartTime is opaque to
// the plugin but must pass ValidStartTime. Instance tells apart server
// instances the host launches differently (their arguments, or the
// configuration they declare); "" when there is nothing to tell.
type IdentityResponse struct {
	PID       int    `json:"pid,omitempty"`
	StartTime string `json:"start_time,omitempty"`
	Instance  string `json:"instance,omitempty"`
	Error     *Error `json:"error,omitempty"`
}

// Empty answers FnPrepareDir, FnWrite, FnRemove and FnLog on success.
type Empty struct {
	Error *Error `json:"error,omitempty"`
}

// NameRequest asks FnRemove to delete one file of the state directory.
type NameRequest struct {
	Name string `json:"name"`
}

// ReadRequest asks FnRead for at most Limit bytes of file Name.
type ReadRequest struct {
	Name  string `json:"name"`
	Limit int    `json:"limit"`
}

// ReadResponse answers FnRead. Data holds the first min(size, Limit) bytes
// (base64 in JSON).
type ReadResponse struct {
	Data  []byte `json:"data,omitempty"`
	Error *Error `json:"error,omitempty"`
}

// WriteRequest asks FnWrite to replace file Name with Data (base64 in JSON),
// mode 0600.
type WriteRequest struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// ProbeRequest asks FnProbe about file Name, whose name says it belongs to
// the host process PID started at StartTime.
type ProbeRequest struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"`
	StartTime string `json:"start_time"`
}

// Host states of ProbeResponse.Host.
const (
	HostAlive   = "alive"   // that process is running with that start time
	HostGone    = "gone"    // no such process, or the pid now names another process or boot
	HostUnknown = "unknown" // the host cannot tell (permissions, platform)
)

// ProbeResponse answers FnProbe: whether the file's host is alive and how
// long ago (seconds, from its modification time) the file was written.
type ProbeResponse struct {
	Host       string `json:"host,omitempty"`
	AgeSeconds int64  `json:"age_seconds"`
	Error      *Error `json:"error,omitempty"`
}

// ListRequest asks FnList for the regular files whose names start with Prefix.
type ListRequest struct {
	Prefix string `json:"prefix"`
}

// ListResponse answers FnList, names sorted ascending.
type ListResponse struct {
	Names []string `json:"names"`
	Error *Error   `json:"error,omitempty"`
}

// Log levels of LogRequest.Level.
const (
	LevelDebug = "debug"
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
)

// LogRequest asks FnLog to emit one line through the host's logger. Message
// is the human text (the spec's lines verbatim), Event a stable machine name
// for it, Detail optional context. None of them ever holds a token.
type LogRequest struct {
	Level   string `json:"level"`
	Event   string `json:"event"`
	Message string `json:"message"`
	Detail  string `json:"detail,omitempty"`
}

// ListedFile is one token file reported by the plugin's ExportList export.
// Instance is the 16-hex-digit instance suffix of the name, if any.
type ListedFile struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"`
	StartTime string `json:"start_time"`
	Instance  string `json:"instance,omitempty"`
}

// NamesOutput is the output of the plugin's ExportNames export: this
// instance's token and lock file names, both "" when identity is unavailable.
type NamesOutput struct {
	Token string `json:"token,omitempty"`
	Lock  string `json:"lock,omitempty"`
}

// PruneOutput is the output of the plugin's ExportPrune export: the token
// and lock files it removed.
type PruneOutput struct {
	Removed []string `json:"removed"`
}

// ListOutput is the output of the plugin's ExportList export.
type ListOutput struct {
	Files []ListedFile `json:"files"`
}

// ValidName reports whether name may name a file in the state directory:
// 1–255 bytes of [A-Za-z0-9._-], not starting with a dot. So no path
// separators, no NUL, no ".." and no hidden files (hosts keep dot-names for
// their own temporary files). Every host enforces this rule on every request.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 255 || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ValidStartTime reports whether s is an acceptable IdentityResponse.StartTime:
// 1–96 bytes of [0-9a-z.], so it can be embedded in a file name and parsed back.
// (The plugin avoids package regexp to keep the module small.)
func ValidStartTime(s string) bool {
	if len(s) == 0 || len(s) > 96 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.') {
			return false
		}
	}
	return true
}

// Pad8 appends spaces to the JSON document b until its length is a multiple
// of 8. go-pdk moves Extism memory 8 bytes per host call and the remainder one
// byte per call, so padding saves up to 7 calls per payload. JSON ignores
// the trailing whitespace; padding is optional for every host.
func Pad8(b []byte) []byte {
	for len(b)%8 != 0 {
		b = append(b, ' ')
	}
	return b
}

// ErrorResponse returns the JSON document {"error": {"code": code, "message": msg}}.
func ErrorResponse(code, msg string) []byte {
	b, _ := json.Marshal(Empty{Error: &Error{Code: code, Message: msg}})
	return Pad8(b)
}
