// Package handles is the handle store: durable state handles for
// sessionless MCP servers (plugin/README.md, "Handle store";
// hostfuncs/README.md, "Plugin exports"). A handle is a bearer secret of
// 192 random bits; the store keeps, per handle, a record sealed with
// AES-256-GCM under a key derived from the handle, named by a hash of the
// handle and the app, in shards that each have an index and a lock.
//
// It is plain Go, like plugin/internal/resume: the plugin (plugin/guest)
// compiles it to Wasm and forwards the handle exports here; native tests
// run it against a Caller. Every file and lock goes through the host
// functions of hostfuncs/README.md.
//
// Files by concern: store.go opens the store and holds the host-call
// helpers; shard.go a shard under its lock (index load, rebuild, expiry);
// ops.go the per-handle operations; admin.go list, gc and the sweeps;
// handle.go the handle syntax and keys; crypto.go the cryptography, which
// the host does (mcp_resume_crypto: HKDF-SHA256, HMAC-SHA256,
// AES-256-GCM);
// record.go and index.go the file formats; config.go the settings and
// duration.go how messages write a duration.
//
// A Store is not safe for concurrent use; hosts serialise calls into the
// plugin instance that owns it (and run one instance per goroutine).
package handles

import (
	"strconv"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// Stable event names of the handle store's log lines
// (hostfuncs.LogRequest.Event); each line's detail names the handle only as
// key=<12 hex of its key hash>.
const (
	EventCreated          = "handle_created"           // debug
	EventDeleted          = "handle_deleted"           // debug
	EventExpired          = "handle_expired"           // info
	EventEvicted          = "handle_evicted"           // info
	EventConflict         = "handle_conflict"          // info
	EventCorrupt          = "handle_corrupt"           // warn
	EventRollback         = "handle_rollback"          // warn
	EventIndexRebuilt     = "handle_index_rebuilt"     // warn
	EventStoreUnavailable = "handle_store_unavailable" // warn
)

// The human text of each event.
const (
	MsgCreated          = "Handle created"
	MsgDeleted          = "Handle deleted"
	MsgExpired          = "Handle expired"
	MsgEvicted          = "Handle evicted: its principal was at its quota, or the store at capacity with this principal holding the most, and it was the principal's least recently used"
	MsgConflict         = "Handle write refused: the expected generation is not the current one"
	MsgCorrupt          = "Handle record corrupted, removed"
	MsgRollback         = "Handle record older than the store acknowledged (rolled back), removed"
	MsgIndexRebuilt     = "Handle index rebuilt from the records"
	MsgStoreUnavailable = "Handle store unavailable"
)

// The Store's host-call helpers are marked go:noinline: inlined into every
// operation they cost plugin.wasm kilobytes and save nothing measurable
// beside a host call.

// File names in the handle store's directory.
const (
	layoutName   = "layout"
	layoutPrefix = "mcp-resume handles v1 shards="
	recordPrefix = "h-"
	indexPrefix  = "i-"
	lockPrefix   = "lock-"
)

// Store is one plugin instance's handle store.
type Store struct {
	call resume.Caller
	set  Settings
	euid int

	rd       *redisConn // the Redis backend's server; nil for the file backend
	opened   bool
	ready    bool  // the directory was prepared and its layout read
	shards   int   // the shard count in effect (the layout file's)
	perShard int64 // live handles allowed per shard
	// perOwner is one principal's quota per shard: the quota spread over
	// the shards, rounded up (perShares).
	perOwner int64
	// held marks the shards that had records when the first call listed
	// the directory: only there does a missing index mean a lost one (to
	// rebuild); elsewhere it is a shard never written, and no listing is
	// needed.
	held [maxShards]bool
	// ownerKey is the key of owner ids (Store.tags), derived from the app
	// at the first create; nil until then.
	ownerKey []byte
	// sockets are the lock files' abstract socket names (lockSocket).
	sockets map[string]string
	// indexKey seals the shards' indexes (deriveIndexKey, at the first
	// call).
	indexKey [32]byte
	// keyCache holds the keys and principal tags of the handles this
	// instance served last (handleKeys); keyCacheNext is the entry a full
	// cache replaces next.
	keyCache     []cachedKeys
	keyCacheNext int
	// callKept and freeKept, when set, let a get leave its value in the
	// host's memory (GetKept; New).
	callKept func(fn string, req []byte, n int) ([]byte, uint64)
	freeKept func(block uint64)
}

// New returns a Store that reaches its host through call. Every export but
// Open fails with hostfuncs.CodeNotOpen until Open succeeds.
func New(call resume.Caller) *Store { return &Store{call: call} }

// Keep gives the store what the guest's host calls offer beyond its
// Caller: callKept calls a host function and leaves the response in the
// host's memory (an Extism memory block), loading only its first n bytes,
// and returns its block (0: no response); free releases a block that is
// not output. Copying between the host's memory and the guest's costs a
// call per 8 bytes, so GetKept leaves a get's value where the host read
// it. Without Keep, GetKept answers as Get.
func (s *Store) Keep(callKept func(fn string, req []byte, n int) ([]byte, uint64), free func(block uint64)) {
	s.callKept, s.freeKept = callKept, free
}

// Open is the handles_open export: input is the JSON
// hostfuncs.HandlesOpenInput. It asks the host for its facts once and
// settles the settings (configure). It touches no file: the host fixes the
// answer's state_dir as the store's directory only when Open returns, so
// the directory is prepared by the first handle_* call. Errors:
// hostfuncs.CodeInvalidApp, CodeInvalidOption (a bad input, an option out
// of range, a bad MCP_RESUME_STATE_IDLE_TTL or MCP_RESUME_STATE_MAX_AGE, a
// second Open), CodeStoreUnavailable (no state root).
func (s *Store) Open(input []byte) (hostfuncs.HandlesOpenOutput, *hostfuncs.Error) {
	if s.opened {
		return hostfuncs.HandlesOpenOutput{}, optionErr("handles_open was already called for this plugin instance")
	}
	var in hostfuncs.HandlesOpenInput
	if err := in.DecodeJSON(input); err != nil {
		return hostfuncs.HandlesOpenOutput{}, resume.OpenInputError(err, "handles_open input is not a JSON object: ", resume.NamesOf(input))
	}
	f, factsOK := resume.HostFacts(s.call)
	set, werr := configure(in, f, factsOK)
	if werr != nil {
		return hostfuncs.HandlesOpenOutput{}, werr
	}
	out := hostfuncs.HandlesOpenOutput{
		StateDir: set.StateDir, StateRoot: set.StateRoot, IdleTTLMS: set.IdleTTLMS, MaxAgeMS: set.MaxAgeMS,
		TombstoneMS: set.TombstoneMS, MaxHandles: set.MaxHandles, MaxValueBytes: set.MaxValueBytes,
		MaxHandlesPerPrincipal: set.MaxHandlesPerPrincipal,
		Shards:                 int64(ShardsFor(set.MaxHandles)), Backend: hostfuncs.BackendFile,
	}
	if set.StateURL != "" {
		c, werr := parseStateURL(set.StateURL, set.Names.Option("state_url"))
		if werr != nil {
			return hostfuncs.HandlesOpenOutput{}, werr
		}
		s.rd = &c
		out.Backend, out.StateURL, out.TimeoutMS = hostfuncs.BackendRedis, c.display, set.TimeoutMS
		out.Shards = int64(BucketsFor(set.MaxHandles))
	}
	s.opened, s.set, s.euid = true, set, f.EUID
	return out, nil
}

// Settings returns the settings in effect (zero before Open).
func (s *Store) Settings() Settings { return s.set }

// begin checks that the store is open and prepares its directory on first
// use: the directory (0700, owner checked, resume.PrepareDir), the layout
// file (written under the lock "lock-layout" when missing), one listing
// (which shards hold records: held), and, when sweep, the stale temporary
// files and the lapsed entries of every shard that holds records (shards
// busy at that moment are skipped).
func (s *Store) begin(now int64, sweep bool) *hostfuncs.Error {
	if !s.opened {
		return &hostfuncs.Error{Code: hostfuncs.CodeNotOpen, Message: "call handles_open before any other handle export"}
	}
	if s.ready {
		return nil
	}
	if werr := resume.PrepareDir(s.call, s.set.StateDir, s.set.StateRoot, s.euid); werr != nil {
		return s.unavailable("the handle store's directory " + s.set.StateDir + " cannot be used: " + werr.Message)
	}
	if werr := s.readLayout(); werr != nil {
		return werr
	}
	if werr := s.deriveIndexKey(); werr != nil {
		return werr
	}
	s.ready = true
	n := (s.set.MaxHandles + int64(s.shards) - 1) / int64(s.shards)
	s.perShard = max(n, 1)
	s.perOwner = perShares(s.set.MaxHandlesPerPrincipal, s.shards)
	files, err := s.listDir()
	for i := range s.held {
		s.held[i] = err != nil
	}
	for _, f := range files {
		if h, ok := parseRecordName(f.Name); ok {
			s.held[s.shardOf(h)] = true
		}
	}
	if sweep {
		// Only shards that hold records can hold lapsed live entries;
		// the tombstones of the others wait for their next create or gc.
		s.sweepTemps(files)
		for i := 0; i < s.shards; i++ {
			if s.held[i] {
				s.sweepShard(i, now)
			}
		}
	}
	return nil
}

// readLayout reads the layout file, writing it first when missing, and
// sets s.shards.
func (s *Store) readLayout() *hostfuncs.Error {
	const lock = lockPrefix + "layout"
	if werr := s.lock(lock, s.set.LockWaitMS, "the layout"); werr != nil {
		return werr
	}
	defer s.unlock(lock)
	var r hostfuncs.ReadResponse
	err := resume.Invoke(s.call, hostfuncs.FnRead, hostfuncs.ReadRequest{Name: layoutName, Limit: 64}, &r, &r.Error)
	if code(err) == hostfuncs.CodeNotFound {
		s.shards = ShardsFor(s.set.MaxHandles)
		if err := s.write(layoutName, []byte(layoutText(s.shards))); err != nil {
			return s.unavailable("cannot write the handle store's layout file: " + err.Error())
		}
		return nil
	}
	if err != nil {
		return s.unavailable("cannot read the handle store's layout file " + s.set.StateDir + "/" + layoutName + ": " + err.Error())
	}
	for n := 1; n <= maxShards; n *= 2 {
		if string(r.Data) == layoutText(n) {
			s.shards = n
			return nil
		}
	}
	return s.unavailable("the handle store's layout file " + s.set.StateDir + "/" + layoutName + " is corrupt (want \"" + layoutPrefix + "<power of two up to 4096>\"); the records cannot be found without it: restore it, or remove the directory to start empty")
}

// layoutText is the layout file of a directory of n shards.
func layoutText(n int) string { return layoutPrefix + strconv.Itoa(n) + "\n" }

// unavailable logs handle_store_unavailable and returns the
// store_unavailable error with msg.
//
//go:noinline
func (s *Store) unavailable(msg string) *hostfuncs.Error {
	msg = shortenKeys(msg)
	s.log(hostfuncs.LevelWarn, EventStoreUnavailable, MsgStoreUnavailable, msg)
	return &hostfuncs.Error{Code: hostfuncs.CodeStoreUnavailable, Message: msg}
}

// lock takes lock file name with mcp_resume_lock, waiting up to waitMS;
// what names the lock in the messages ("shard 0a"). The error is
// store_unavailable (logged).
//
//go:noinline
func (s *Store) lock(name string, waitMS int64, what string) *hostfuncs.Error {
	err := s.tryLock(name, waitMS)
	switch {
	case err == nil:
		return nil
	case code(err) == hostfuncs.CodeBusy:
		return s.unavailable("the handle store is busy: another process held " + what + " for " + msText(waitMS) + "; retry, or raise " + s.set.Names.Option("lock_wait_ms"))
	}
	return s.unavailable("cannot lock " + what + " of the handle store: " + err.Error())
}

// tryLock takes lock file name, waiting up to waitMS; the error is the
// host's (CodeBusy when another holder kept it).
//
//go:noinline
func (s *Store) tryLock(name string, waitMS int64) error {
	sock, werr := s.lockSocket(name)
	if werr != nil {
		return werr
	}
	var e hostfuncs.Empty
	return resume.Invoke(s.call, hostfuncs.FnLock, hostfuncs.LockRequest{Name: name, Socket: sock, WaitMS: int(waitMS)}, &e, &e.Error)
}

// lockSocket is lock file name's abstract socket (resume.LockSocket),
// asked of the host once per name and kept.
func (s *Store) lockSocket(name string) (string, *hostfuncs.Error) {
	if sock, ok := s.sockets[name]; ok {
		return sock, nil
	}
	sock, werr := resume.LockSocket(s.call, s.set.StateDir, name)
	if werr != nil {
		return "", werr
	}
	if s.sockets == nil {
		s.sockets = map[string]string{}
	}
	s.sockets[name] = sock
	return sock, nil
}

// unlock releases lock file name (mcp_resume_unlock); a failure is
// ignored (the lock goes with the process at the latest).
//
//go:noinline
func (s *Store) unlock(name string) {
	sock, _ := s.lockSocket(name)
	var e hostfuncs.Empty
	_ = resume.Invoke(s.call, hostfuncs.FnUnlock, hostfuncs.UnlockRequest{Name: name, Socket: sock}, &e, &e.Error)
}

// write replaces file name with data (temporary file and rename).
//
//go:noinline
func (s *Store) write(name string, data []byte) error {
	var e hostfuncs.Empty
	return resume.Invoke(s.call, hostfuncs.FnWrite, hostfuncs.WriteRequest{Name: name, Temp: resume.TempName(name), Data: data}, &e, &e.Error)
}

// remove deletes file name; a missing file is a success.
//
//go:noinline
func (s *Store) remove(name string) error {
	var e hostfuncs.Empty
	err := resume.Invoke(s.call, hostfuncs.FnRemove, hostfuncs.NameRequest{Name: name}, &e, &e.Error)
	if code(err) == hostfuncs.CodeNotFound {
		return nil
	}
	return err
}

// read reads at most limit bytes of file name.
//
//go:noinline
func (s *Store) read(name string, limit int) ([]byte, error) {
	var r hostfuncs.ReadResponse
	err := resume.Invoke(s.call, hostfuncs.FnRead, hostfuncs.ReadRequest{Name: name, Limit: limit}, &r, &r.Error)
	return r.Data, err
}

// listDir lists the directory (mcp_resume_list).
//
//go:noinline
func (s *Store) listDir() ([]hostfuncs.ListEntry, error) {
	var r hostfuncs.ListResponse
	err := resume.Invoke(s.call, hostfuncs.FnList, hostfuncs.ListRequest{}, &r, &r.Error)
	return r.Files, err
}

// log sends one line to the host's logger; a failing logger is ignored.
//
//go:noinline
func (s *Store) log(level, event, msg, detail string) { resume.Log(s.call, level, event, msg, detail) }

// code is the host error code of err, "" for none.
func code(err error) string {
	if werr, ok := err.(*hostfuncs.Error); ok {
		return werr.Code
	}
	return ""
}

// ioFailure words a failed write or remove of the handle store for its
// caller: what failed and what to do.
func (s *Store) ioFailure(what string, err error) *hostfuncs.Error {
	msg := "cannot " + what + " in " + s.set.StateDir + ": " + err.Error()
	switch code(err) {
	case hostfuncs.CodeNoSpace:
		msg += "; free some disk space"
	case hostfuncs.CodeReadOnly:
		msg += "; the file system is read-only: point MCP_RESUME_STATE_DIR at a writable directory"
	}
	return s.unavailable(msg)
}

// nowMS is the clock of a call: in.NowMS when given, else the guest's clock.
func nowMS(in *hostfuncs.HandleInput) int64 {
	if in.NowSet {
		return in.NowMS
	}
	return time.Now().UnixMilli()
}

// shardName is shard n's name in its files and locks: two hex digits in a
// store of at most 256 shards (as every store had before), three above.
func (s *Store) shardName(n int) string {
	const digits = "0123456789abcdef"
	if s.shards > 256 {
		return string([]byte{digits[n>>8&15], digits[n>>4&15], digits[n&15]})
	}
	return string([]byte{digits[n>>4&15], digits[n&15]})
}

// parseShardName returns the shard of an index file name ("i-" and
// shardName's digits, lowercase), false for anything else.
func (s *Store) parseShardName(name string) (int, bool) {
	want := 2
	if s.shards > 256 {
		want = 3
	}
	if len(name) != len(indexPrefix)+want || name[:len(indexPrefix)] != indexPrefix {
		return 0, false
	}
	n := 0
	for _, c := range []byte(name[len(indexPrefix):]) {
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | int(c-'a'+10)
		default:
			return 0, false
		}
	}
	return n, n < s.shards
}

// emptyObject is the output of handle_delete, {}.
type emptyObject struct{}

func (emptyObject) EncodeJSON() ([]byte, error) { return []byte("{}"), nil }

// Export runs the handle store's export name (one of
// hostfuncs.HandleExports) on input and returns its JSON output or its
// error, for callers that hold an export's name (the native case runner;
// the plugin's glue calls each method directly, which keeps this switch
// out of plugin.wasm). An unknown name is invalid_option.
func (s *Store) Export(name string, input []byte) ([]byte, *hostfuncs.Error) {
	var out interface{ EncodeJSON() ([]byte, error) }
	var werr *hostfuncs.Error
	switch name {
	case hostfuncs.ExportHandlesOpen:
		out, werr = s.Open(input)
	case hostfuncs.ExportHandleCreate:
		out, werr = s.Create(input)
	case hostfuncs.ExportHandleGet:
		out, werr = s.Get(input)
	case hostfuncs.ExportHandlePut:
		out, werr = s.Put(input)
	case hostfuncs.ExportHandleDelete:
		out, werr = emptyObject{}, s.Delete(input)
	case hostfuncs.ExportHandleTouch:
		out, werr = s.Touch(input)
	case hostfuncs.ExportHandleExists:
		out, werr = s.Exists(input)
	case hostfuncs.ExportHandleList:
		out, werr = s.List(input)
	case hostfuncs.ExportHandleGC:
		out, werr = s.GC(input)
	default:
		return nil, optionErr("no handle store export " + strconv.Quote(name))
	}
	if werr != nil {
		return nil, werr
	}
	b, _ := out.EncodeJSON()
	return b, nil
}

// shortenKeys cuts every record name in msg (a host's message may quote
// the file it failed on) to the short key hash that log lines use:
// "h-" and 32 hex digits become "h-" and 12, so no line or error carries
// a whole key hash.
func shortenKeys(msg string) string {
	const nameLen = len(recordPrefix) + 32
	for i := 0; i+nameLen <= len(msg); i++ {
		if _, ok := parseRecordName(msg[i : i+nameLen]); ok {
			msg = msg[:i+len(recordPrefix)+12] + "…" + msg[i+nameLen:]
		}
	}
	return msg
}
