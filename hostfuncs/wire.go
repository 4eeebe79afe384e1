// The host functions' names and payloads, in the order of
// hostfuncs/README.md; the plugin's exports and their JSON are in
// exports.go, the package documentation in doc.go.

package hostfuncs

// ABIVersion is the version of the contract between plugin and host. The
// plugin returns it from its ExportABIVersion export; a host refuses a plugin
// whose version differs from the one it implements.
const ABIVersion = "11"

// Namespace is the Wasm import module of every host function. It is the
// Extism default for user host functions.
const Namespace = "extism:host/user"

// Host functions the plugin imports. Each takes one Extism memory offset
// holding a JSON request and returns one offset holding a JSON response
// (see hostfuncs/README.md, "Calling convention"). None of them holds policy:
// they report facts about the process and the OS, and act on files in the
// state directory.
const (
	FnFacts      = "mcp_resume_facts"
	FnInspect    = "mcp_resume_inspect"
	FnPrepareDir = "mcp_resume_prepare_dir"
	FnRead       = "mcp_resume_read"
	FnWrite      = "mcp_resume_write"
	FnRemove     = "mcp_resume_remove"
	FnList       = "mcp_resume_list"
	FnLock       = "mcp_resume_lock"
	FnLog        = "mcp_resume_log"
	FnUnlock     = "mcp_resume_unlock"
	FnEval       = "mcp_resume_eval"
	// FnCrypto is the one host function with a binary request and
	// response (CryptoOp*, CryptoStatus*; hostfuncs/README.md,
	// "mcp_resume_crypto"): HKDF, HMAC, AES-256-GCM, and reading or
	// writing a sealed record in one call.
	FnCrypto = "mcp_resume_crypto"
)

// Functions lists every host function name, in the order of the README.
func Functions() []string {
	return []string{FnFacts, FnInspect, FnPrepareDir, FnRead, FnWrite, FnRemove, FnList, FnLock, FnLog, FnUnlock, FnEval, FnCrypto}
}

// Error codes a host function may return in Error.Code.
const (
	// CodeNotFound: the file, directory or process does not exist (ENOENT,
	// ESRCH, an empty sysctl answer, EBADF: a closed fd for fstat and peer).
	CodeNotFound = "not_found"
	// CodePermission: the OS refused (EACCES, EPERM): another user's
	// process, a /proc mounted hidepid, a non-dumpable process.
	CodePermission = "permission"
	// CodeUnsupported: this host cannot answer this operation on this
	// system or runtime (Node has no SO_PEERCRED and no sysctl).
	CodeUnsupported = "unsupported"
	// CodeInvalidRequest: malformed JSON, a missing field or one of the
	// wrong type or range, an unknown operation, a name that breaks the
	// name rule, or a file function called before open fixed the state
	// directory.
	CodeInvalidRequest = "invalid_request"
	// CodeUnsafe: a symlink (ELOOP), a directory (EISDIR) or another
	// non-regular file where a regular file is required.
	CodeUnsafe = "unsafe"
	// CodeBusy: another process holds the lock (FnLock).
	CodeBusy = "busy"
	// CodeIO: any other operating-system error.
	CodeIO = "io"
	// CodeExists: FnPrepareDir "mkdir" found something at the path (EEXIST).
	CodeExists = "exists"
	// CodeNotDir: a component of the path is not a directory (ENOTDIR).
	CodeNotDir = "not_dir"
	// CodeNoSpace: the file system is full, or the user's quota is used up
	// (ENOSPC, EDQUOT).
	CodeNoSpace = "no_space"
	// CodeReadOnly: the file system is mounted read-only (EROFS).
	CodeReadOnly = "read_only"
	// CodeNoScript: FnEval's EVALSHA named a script the Redis server does
	// not hold (its NOSCRIPT error): the plugin sends the script itself.
	CodeNoScript = "noscript"
	// CodeScript: FnEval's server answered an error reply other than
	// NOSCRIPT (a Lua error, WRONGTYPE, OOM, an unknown command where
	// scripting is off); Message holds the server's error text.
	CodeScript = "script"
	// CodeUnavailable: FnEval could not reach the server, or the
	// connection broke, or the server cannot run a script now (connection
	// refused or reset, a DNS or TLS failure, LOADING, BUSY, CLUSTERDOWN,
	// READONLY, MASTERDOWN, TRYAGAIN, a MOVED or ASK left after the
	// client's redirects).
	CodeUnavailable = "unavailable"
	// CodeAuth: FnEval's server refused the URL's credentials: NOAUTH (a
	// password is required and none was given), WRONGPASS, or any other
	// failure of AUTH while connecting (ABI 9; before, unavailable).
	CodeAuth = "auth"
	// CodeTimeout: FnEval had no answer within the request's timeout_ms.
	CodeTimeout = "timeout"
)

// Error is the failure half of every host-function response, and the JSON
// an export sets as its Extism error string. A host function never fails by
// trapping or raising: it returns {"error": {...}} (the Python SDK swallows
// exceptions raised in host functions, so errors travel in payloads).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Reason (handle store exports only): why a handle expired,
	// ReasonIdle or ReasonMaxAge, with CodeHandleExpired; ReasonAuth with
	// CodeStoreUnavailable when Redis refused the credentials; "" otherwise.
	Reason string `json:"reason,omitempty"`
	// Generation (handle store exports only): the handle's current
	// generation, with CodeConflict; 0 otherwise.
	Generation int64 `json:"generation,omitempty"`
}

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Facts answers FnFacts: what the host knows about its own process. The
// plugin derives every default from them (state directory, instance key,
// launchers, the MCP_RESUME switch).
type Facts struct {
	// OS is "linux", "darwin", or another system name (resume is then off).
	OS string `json:"os"`
	// PID is this server process's pid.
	PID int `json:"pid"`
	// EUID is the effective user id; -1 where the system has none.
	EUID int `json:"euid"`
	// Home is $HOME when it is set and absolute, else the home directory of
	// the effective uid's password-database entry (getpwuid(3): Go os/user,
	// Python pwd, Node os.userInfo()), "" when neither is known. Every host
	// applies the same fallback, so HOME unset gives one answer everywhere.
	Home string `json:"home"`
	// XDGStateHome is $XDG_STATE_HOME as set, "" when unset.
	XDGStateHome string `json:"xdg_state_home"`
	// Args are the server's arguments after the program (and, for Python and
	// Node, after the script): os.Args[1:], sys.argv[1:], process.argv.slice(2).
	Args []string `json:"args"`
	// Cwd is the server's working directory (getcwd(3)), "" when it cannot
	// be read. Part of the default instance key.
	Cwd string `json:"cwd"`
	// Env holds every environment variable of the server process. The
	// plugin picks what it needs: the MCP_RESUME* switches, and the rest
	// (minus the variables of policy.VolatileEnv) for the default instance
	// key. Hosts replace bytes that are not UTF-8 with U+FFFD, as in Args
	// and Cwd.
	Env map[string]string `json:"env"`
	// Runtime names the host for logs, e.g. "go-sdk", "python", "node".
	Runtime string `json:"runtime"`
	// StdioFDs names the two fds of this process that hold the server's
	// MCP stdin and stdout as its host set them up, in that order: the
	// plugin's stdio check inspects these (fstat, peer, readlink
	// /proc/self/fd/<n>). Absent or null means [0, 1]. A binding whose MCP
	// SDK repoints fds 0 and 1 while it serves (the Python SDK points them
	// at /dev/null) duplicates them when the store is created and reports
	// the copies. Any other length, or a negative fd, makes the check
	// cannot-tell (resume off).
	StdioFDs []int  `json:"stdio_fds,omitempty"`
	Error    *Error `json:"error,omitempty"`
}

// Inspect operations (InspectOp.Op): typed questions, no paths. The host
// builds each /proc path itself from the operation (hostfuncs/README.md,
// "mcp_resume_inspect"); a host answers for the system facts.os names.
const (
	OpBootID   = "boot_id"  // Data: /proc/sys/kernel/random/boot_id
	OpSelf     = "self"     // Target: readlink /proc/self
	OpTimens   = "timens"   // Data: /proc/self/timens_offsets
	OpStat     = "stat"     // PID ("self" ok): Data of /proc/<pid>/stat
	OpCmdline  = "cmdline"  // PID ("self" ok): Data of /proc/<pid>/cmdline
	OpPidNS    = "pid_ns"   // PID ("self" ok): Target of readlink /proc/<pid>/ns/pid
	OpFDLink   = "fd_link"  // PID ("self" ok), FD: Target of readlink /proc/<pid>/fd/<fd>
	OpFDs      = "fds"      // PID ("self" ok): the open fds of a process, with targets and flags
	OpKill0    = "kill0"    // PID: kill(pid, 0)
	OpFstat    = "fstat"    // FD: the file type of this process's fd (one of facts.stdio_fds)
	OpPeer     = "peer"     // FD: SO_PEERCRED pid of this process's socket fd
	OpSysctl   = "sysctl"   // PID: raw struct kinfo_proc (macOS)
	OpProcargs = "procargs" // PID: raw kern.procargs2 (macOS)
	OpPs       = "ps"       // PID: ps output where sysctl is impossible (macOS, Node)
	OpExe      = "exe"      // PID: device and inode of the program image, stat(2) of /proc/<pid>/exe (Linux)
	OpEnviron  = "environ"  // PID ("self" ok): Data of /proc/<pid>/environ, the environment as it was at exec (ABI 8)
	OpNS       = "ns"       // PID ("self" ok), NS: Target of readlink /proc/<pid>/ns/<ns> (ABI 8)
	OpNet      = "net"      // PID ("self" ok), Table: Data of /proc/<pid>/net/<table>, the sockets of its network namespace (ABI 8)

)

// ProcOp is what a /proc operation of mcp_resume_inspect reads: Path under
// /proc, where "<P>" stands for the checked pid or "self", "<N>" for the
// checked fd, "<NS>" for a name of Namespaces and "<T>" for one of
// NetTables, and whether the answer is the link's "target" (Link) or the
// file's "data" (for OpFDs: the directory listed). It is the table of
// hostfuncs/README.md, "mcp_resume_inspect", for Go hosts and runners.
type ProcOp struct {
	Path string
	Link bool
	// Max is the most bytes a data operation returns: MaxProcRead, or
	// MaxProcTableRead for the files that grow with the system (environ,
	// net tables). A plugin reading exactly Max bytes cannot tell whether
	// the file was longer.
	Max int
}

// MaxProcRead is the most bytes a data operation returns of a /proc file
// (stat, cmdline, boot_id, timens_offsets).
const MaxProcRead = 65536

// MaxProcTableRead is the most bytes the environ and net operations return:
// an environment or a socket table can outgrow MaxProcRead.
const MaxProcTableRead = 1 << 20

// Namespaces is the set of namespace names OpNS accepts (InspectOp.NS):
// the entries of /proc/<pid>/ns that name a process's view of the system.
var Namespaces = []string{"net", "mnt", "uts", "ipc", "user", "cgroup", "pid"}

// NetTables is the set of socket tables OpNet accepts (InspectOp.Table):
// the files of /proc/<pid>/net (proc_net(5)) that list sockets with their
// inodes.
var NetTables = []string{"tcp", "tcp6", "udp", "udp6", "unix"}

// ProcOpOf returns what the /proc operation op reads, and false when op
// is not one (kill0, exe, fstat… or unknown).
func ProcOpOf(op string) (ProcOp, bool) {
	switch op {
	case OpBootID:
		return ProcOp{"sys/kernel/random/boot_id", false, MaxProcRead}, true
	case OpSelf:
		return ProcOp{"self", true, 0}, true
	case OpTimens:
		return ProcOp{"self/timens_offsets", false, MaxProcRead}, true
	case OpStat:
		return ProcOp{"<P>/stat", false, MaxProcRead}, true
	case OpCmdline:
		return ProcOp{"<P>/cmdline", false, MaxProcRead}, true
	case OpPidNS:
		return ProcOp{"<P>/ns/pid", true, 0}, true
	case OpFDLink:
		return ProcOp{"<P>/fd/<N>", true, 0}, true
	case OpFDs:
		return ProcOp{"<P>/fd", false, 0}, true
	case OpEnviron:
		return ProcOp{"<P>/environ", false, MaxProcTableRead}, true
	case OpNS:
		return ProcOp{"<P>/ns/<NS>", true, 0}, true
	case OpNet:
		return ProcOp{"<P>/net/<T>", false, MaxProcTableRead}, true
	}
	return ProcOp{}, false
}

// PIDSelf is the PID of an operation about the calling process itself,
// allowed for OpStat, OpCmdline, OpPidNS, OpFDLink and OpFDs.
const PIDSelf = "self"

// InspectRequest asks FnInspect for up to MaxInspectOps operations at once,
// so a start makes few host calls.
type InspectRequest struct {
	Ops []InspectOp `json:"ops"`
}

// MaxInspectOps is the most operations one FnInspect request may carry.
const MaxInspectOps = 64

// InspectOp is one read-only question about the OS. Which fields are used
// depends on Op; see hostfuncs/README.md, "mcp_resume_inspect".
type InspectOp struct {
	Op string `json:"op"`
	// PID, a string: for stat, cmdline, pid_ns, fd_link, fds, environ, ns
	// and net PIDSelf or
	// decimal digits without a leading zero, 1..2147483647; for kill0, exe,
	// sysctl, procargs and ps the digits only.
	PID string `json:"pid,omitempty"`
	// FD, for fstat, peer and fd_link: an fd number, 0..2147483647. Beware:
	// the omitempty tag drops fd 0, so an encoder must write "fd" itself for
	// those three (InspectRequest.EncodeJSON does; the field stays an int so
	// that literals read naturally).
	FD int `json:"fd,omitempty"`
	// Targets, for fds: report only fds whose link target is one of these
	// (nil reports every fd).
	Targets []string `json:"targets,omitempty"`
	// NS, for ns: one of Namespaces.
	NS string `json:"ns,omitempty"`
	// Table, for net: one of NetTables.
	Table string `json:"table,omitempty"`
}

// InspectResponse answers FnInspect: one result per operation, in order.
// Error is set only when the request as a whole was unusable.
type InspectResponse struct {
	Results []InspectResult `json:"results"`
	Error   *Error          `json:"error,omitempty"`
}

// InspectResult is the answer to one InspectOp: exactly one of the success
// fields for its Op, or Error.
type InspectResult struct {
	// Data: boot_id, timens, stat, cmdline (the file's first 65536
	// bytes), sysctl, procargs (raw bytes), ps (the stat line). Base64 in
	// JSON.
	Data []byte `json:"data,omitempty"`
	// Args: ps only, the output of `ps -ww -o args=` (base64 in JSON).
	Args []byte `json:"args,omitempty"`
	// Target: self, pid_ns, fd_link (the link's target).
	Target string `json:"target,omitempty"`
	// FDs: fds.
	FDs []FD `json:"fds,omitempty"`
	// Type: fstat, one of the FileType* values.
	Type string `json:"type,omitempty"`
	// PeerPID: peer; 0 when the peer is outside this PID namespace.
	PeerPID *int `json:"peer_pid,omitempty"`
	// Dev and Ino: exe, st_dev and st_ino of stat(2) of /proc/<pid>/exe
	// (which follows the link to the program file), as decimal strings
	// (an inode number may exceed 2^53, which JSON numbers in JavaScript
	// cannot carry).
	Dev   string `json:"dev,omitempty"`
	Ino   string `json:"ino,omitempty"`
	Error *Error `json:"error,omitempty"`
}

// FD is one open file descriptor of a process (OpFDs).
type FD struct {
	FD     int    `json:"fd"`
	Target string `json:"target"`
	// Flags is the octal "flags:" value of /proc/<pid>/fdinfo/<fd> as a
	// number; -1 when fdinfo could not be read.
	Flags int `json:"flags"`
}

// File types of InspectResult.Type (OpFstat).
const (
	FileTypeFIFO   = "fifo"
	FileTypeSocket = "socket"
	FileTypeChar   = "char"
	FileTypeFile   = "file"
	FileTypeDir    = "dir"
	FileTypeOther  = "other"
)

// Operations of FnPrepareDir (PrepareDirRequest.Op). The plugin walks and
// judges the state directory with "stat" and "mkdir" (plugin/internal/resume,
// dir.go); the host holds no rule about owners or modes. The state
// directory itself is fixed by a successful open (OpenOutput.StateDir).
const (
	// DirOpStat: lstat(Path) (stat(Path) with Follow); answers DirStat.
	DirOpStat = "stat"
	// DirOpMkdir: mkdir(Path, 0700), exactly one directory, never parents;
	// only the open state directory or one of its ancestors.
	DirOpMkdir = "mkdir"
)

// PrepareDirRequest is one operation of FnPrepareDir on an absolute, clean
// Path: DirOpStat or DirOpMkdir.
type PrepareDirRequest struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	// Follow (DirOpStat only): stat rather than lstat, so a symbolic link
	// reports what it points at.
	Follow bool `json:"follow,omitempty"`
}

// Types of DirStat.Type.
const (
	StatDir     = "dir"
	StatFile    = "file"
	StatSymlink = "symlink"
	StatOther   = "other"
)

// DirStat answers FnPrepareDir: for DirOpStat the Type, owner UID and Mode
// (st_mode & 07777: permission, setuid, setgid and sticky bits) of the path;
// for DirOpMkdir nothing but a possible Error.
type DirStat struct {
	Type  string `json:"type,omitempty"`
	UID   int    `json:"uid"`
	Mode  int    `json:"mode"`
	Error *Error `json:"error,omitempty"`
}

// Empty answers FnWrite, FnRemove, FnLock and FnLog on success.
type Empty struct {
	Error *Error `json:"error,omitempty"`
}

// NameRequest names one file of the state directory (FnRemove).
type NameRequest struct {
	Name string `json:"name"`
}

// LockRequest asks FnLock for the exclusive lock of file Name. Socket is
// the abstract Unix socket name (without the leading NUL) that every host
// on Linux binds as well, so that servers on different hosts (Go, Python,
// Node) exclude one another through one lock; hosts elsewhere ignore it.
//
// WaitMS (0..MaxLockWaitMS milliseconds, default 0) is how long the host
// keeps trying while another holder has it before it answers CodeBusy: 0
// tries once. The handle store waits; the resume store never does.
type LockRequest struct {
	Name   string `json:"name"`
	Socket string `json:"socket,omitempty"`
	WaitMS int    `json:"wait_ms,omitempty"`
}

// MaxLockWaitMS is the largest wait_ms FnLock accepts (10 s).
const MaxLockWaitMS = 10000

// UnlockRequest asks FnUnlock to release the lock of file Name that this
// store took with FnLock (Socket as given there). Releasing a lock the
// store does not hold is a success: unlock is idempotent.
type UnlockRequest struct {
	Name   string `json:"name"`
	Socket string `json:"socket,omitempty"`
}

// MaxReadLimit is the largest "limit" FnRead accepts: 8 MiB, room for a
// sealed handle record of the largest value a handle store allows.
const MaxReadLimit = 8 << 20

// ReadRequest asks FnRead for at most Limit bytes of file Name.
type ReadRequest struct {
	Name  string `json:"name"`
	Limit int    `json:"limit"`
}

// ReadResponse answers FnRead. Data holds the first min(size, Limit) bytes
// (base64 in JSON).
type ReadResponse struct {
	Data  []byte `json:"data"`
	Error *Error `json:"error,omitempty"`
}

// WriteRequest asks FnWrite to replace file Name with Data (base64 in JSON),
// mode 0600, through the temporary file Temp: create Temp exclusively,
// write, close, rename Temp to Name. The plugin names Temp
// ".<Name>.<16 lowercase hex digits from the guest's random source>.tmp"
// (plugin/internal/resume); both obey ValidName.
type WriteRequest struct {
	Name string `json:"name"`
	Temp string `json:"temp"`
	Data []byte `json:"data"`
}

// ListRequest asks FnList for every entry of the state directory. It has no
// fields; the plugin filters the answer (regular files, its own name rule,
// a prefix) itself.
type ListRequest struct{}

// ListResponse answers FnList, in any order.
type ListResponse struct {
	Files []ListEntry `json:"files"`
	Error *Error      `json:"error,omitempty"`
}

// ListEntry is one entry directly in the state directory: its name (bytes
// that are not UTF-8 sent as U+FFFD), its Type from lstat (one of the Stat*
// values: StatFile, StatDir, StatSymlink, StatOther) and its age in whole
// seconds (floor of now minus its modification time, from lstat; negative
// when the clock moved back).
type ListEntry struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	AgeSeconds int64  `json:"age_seconds"`
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
// for it, Detail optional context. None of them ever holds a token. Level,
// Event and Message are required in every host.
type LogRequest struct {
	Level   string `json:"level"`
	Event   string `json:"event"`
	Message string `json:"message"`
	Detail  string `json:"detail,omitempty"`
}

// MaxNameLen is the longest name, in bytes, of the host rule (ValidName).
const MaxNameLen = 255

// ValidName reports whether name obeys the host rule for names given to
// FnRead, FnWrite (name and temp), FnRemove and FnLock: one path element,
// 1–255 bytes, not "." or "..", no '/', no NUL byte. Every host refuses
// anything else with CodeInvalidRequest before any system call. The
// plugin's own naming policy is stricter (plugin/internal/resume).
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLen || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' || name[i] == 0 {
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

// EvalRequest asks FnEval to run one Lua script on a Redis or Valkey
// server, atomically (EVALSHA, or EVAL when Script is given). The plugin
// writes every script; the host runs it and hands back the reply.
//
// URL is redis://[user:password@]host:port[/db] or rediss:// (TLS), as the
// plugin checked it: no query. Cluster: the URL names one node of a Redis
// Cluster, and the host runs the script on the node that owns the slot of
// Keys[0] (every key of one call shares a hash tag). Exactly one of SHA1
// (40 lowercase hex digits) and Script is given. Keys and Args are passed
// as the script's KEYS and ARGV. TimeoutMS (1..MaxEvalTimeoutMS) bounds
// the whole call, connecting included.
type EvalRequest struct {
	URL       string   `json:"url"`
	Cluster   bool     `json:"cluster,omitempty"`
	SHA1      string   `json:"sha1,omitempty"`
	Script    string   `json:"script,omitempty"`
	Keys      []string `json:"keys"`
	Args      []string `json:"args"`
	TimeoutMS int      `json:"timeout_ms"`
}

// MaxEvalTimeoutMS is the largest timeout_ms FnEval accepts (60 s).
const MaxEvalTimeoutMS = 60000

// EvalResponse answers FnEval: the script's Reply, or Error (CodeNoScript,
// CodeScript, CodeUnavailable, CodeTimeout, CodeInvalidRequest,
// CodeUnsupported).
type EvalResponse struct {
	Reply Reply  `json:"reply"`
	Error *Error `json:"error,omitempty"`
}

// Reply kinds (Reply.Kind).
const (
	ReplyNull   = 'n' // a nil reply (Lua false or nil): JSON null
	ReplyInt    = 'i' // an integer reply (a Lua number, truncated): a JSON integer
	ReplyString = 's' // a bulk or status reply: a JSON string (UTF-8, U+FFFD for bad bytes)
	ReplyArray  = 'a' // an array reply: a JSON array of replies
	ReplyError  = 'e' // an error reply inside an array: {"err": message}
)

// Reply is one Redis reply as FnEval carries it in JSON: null, an
// integer, a string, an array of replies, or {"err": message}.
type Reply struct {
	Kind  byte
	Int   int64
	Str   string
	Array []Reply
}

// The operations of FnCrypto: the first byte of its binary request
// (hostfuncs/README.md, "mcp_resume_crypto", gives each one's fields).
const (
	CryptoOpHKDF      byte = 0x01 // batched HKDF-SHA256 (RFC 5869)
	CryptoOpHMAC      byte = 0x02 // batched HMAC-SHA256
	CryptoOpSeal      byte = 0x03 // AES-256-GCM seal
	CryptoOpOpen      byte = 0x04 // AES-256-GCM open
	CryptoOpReadOpen  byte = 0x05 // read a file of the state directory and open it
	CryptoOpSealWrite byte = 0x06 // seal and write a file of the state directory
	CryptoOpSHA256    byte = 0x07 // batched SHA-256
)

// The first byte of an FnCrypto response.
const (
	CryptoStatusOK       byte = 0x00 // success; the output follows
	CryptoStatusNoOpen   byte = 0x01 // the seal does not open (open, read_open)
	CryptoStatusJSONFail byte = '{'  // a failure: the JSON {"error": {...}} of every host function
)

// Bounds of FnCrypto's fields.
const (
	CryptoMaxBatch     = 16   // hkdf, hmac and sha256: at most this many per request
	CryptoMaxHKDFLen   = 64   // hkdf: at most this many output bytes each
	CryptoMaxHeaderLen = 4096 // read_open: the largest header_len
	CryptoKeyLen       = 32   // AES-256 key bytes
	CryptoNonceLen     = 12   // AES-GCM nonce bytes
	CryptoTagLen       = 16   // AES-GCM tag bytes
)

// HandleBinaryForm is the first byte of the binary input of handle_create,
// handle_get and handle_put (hostfuncs/README.md, "Binary form").
const HandleBinaryForm byte = 0x01

// The flag bits of the binary handle input.
const (
	HandleFlagNow        byte = 1 << 0
	HandleFlagGeneration byte = 1 << 1
	HandleFlagIdleTTL    byte = 1 << 2
	HandleFlagMaxAge     byte = 1 << 3
	HandleFlagValue      byte = 1 << 4
)
