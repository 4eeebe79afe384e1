package handles

// The handle store's settings: handles_open's options, the environment and
// the defaults (hostfuncs/README.md, "Plugin exports", handles_open).

import (
	"strconv"
	"strings"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// Environment variables of the handle store, read from facts.env (Go
// duration syntax, greater than 0).
const (
	EnvIdleTTL = "MCP_RESUME_STATE_IDLE_TTL"
	EnvMaxAge  = "MCP_RESUME_STATE_MAX_AGE"
)

// Defaults and bounds, in milliseconds, handles and bytes.
const (
	DefaultIdleTTLMS     = 24 * hourMS
	DefaultMaxAgeMS      = 30 * 24 * hourMS
	DefaultTombstoneMS   = 7 * 24 * hourMS
	DefaultMaxHandles    = 10000
	DefaultMaxValueBytes = 1 << 20
	DefaultLockWaitMS    = 2000
	// MaxValueBytes is the largest max_value_bytes a store may set (4 MiB).
	MaxValueBytes = 4 << 20
	// MaxHandles is the largest max_handles a store may set.
	MaxHandles = 1 << 24
	// maxShards bounds the shard count of a directory (4096: 1024 at
	// max_handles 200,000, about 100 entries per index at 100,000
	// handles). Directories made with at most 256 shards keep them and
	// find every record where they did (Store.shardOf).
	maxShards = 4096
	// maxBuckets bounds the bucket count of a Redis store, which keeps
	// 256 (its buckets are scripts' key sets, not files read whole).
	maxBuckets = 256
	// handlesPerShard is the number of handles a shard is planned for.
	handlesPerShard = 128
)

// hourMS is an hour in milliseconds.
const hourMS = int64(3600 * 1000)

// DirName is the handle store's folder inside the app's state directory.
const DirName = "handles"

// Settings are a handle store's settings in effect.
type Settings struct {
	App         string
	StateDir    string // <state root>/<app dir>/handles
	StateRoot   string
	IdleTTLMS   int64
	MaxAgeMS    int64
	TombstoneMS int64
	MaxHandles  int64
	// MaxHandlesPerPrincipal is one principal's quota of live handles
	// (DefaultPrincipalQuota unless given).
	MaxHandlesPerPrincipal int64
	MaxValueBytes          int64
	LockWaitMS             int64
	// StateURL is the Redis backend's URL as given ("" for the file
	// backend) and TimeoutMS its deadline per operation.
	StateURL  string
	TimeoutMS int64
	// Names words options and operations in the caller's language.
	Names resume.Names
}

// ShardsFor is the shard count of a new directory for maxHandles: the
// largest power of two not above maxHandles/128, at least 1 and at most
// 4096 (maxShards; a store at its cap holds about 128 handles per shard).
func ShardsFor(maxHandles int64) int { return shardsUpTo(maxHandles, maxShards) }

// BucketsFor is the bucket count of a new Redis store for maxHandles:
// ShardsFor's rule, at most 256 (maxBuckets).
func BucketsFor(maxHandles int64) int { return shardsUpTo(maxHandles, maxBuckets) }

// shardsUpTo is the largest power of two not above maxHandles/128, at
// least 1 and at most limit.
func shardsUpTo(maxHandles int64, limit int) int {
	s := 1
	for s*2 <= limit && int64(s*2) <= maxHandles/handlesPerShard {
		s *= 2
	}
	return s
}

// configure settles the settings from the input, the facts' environment
// and the defaults. Errors: hostfuncs.CodeInvalidApp and
// CodeInvalidOption as resume.Configure words them; CodeInvalidOption for
// an option out of range or a bad environment value;
// CodeStoreUnavailable when there is no state root (no home directory).
func configure(in hostfuncs.HandlesOpenInput, f hostfuncs.Facts, factsOK bool) (Settings, *hostfuncs.Error) {
	c, werr := resume.Configure(hostfuncs.OpenInput{App: in.App, StateRoot: in.StateRoot, Caller: in.Caller, AppMissing: in.AppMissing}, f, factsOK)
	if werr != nil {
		return Settings{}, werr
	}
	n := c.Names
	st := Settings{App: c.App, StateURL: in.StateURL, Names: n}
	if st.StateURL == "" {
		st.StateURL = f.Env[EnvStateURL]
	}
	switch {
	case st.StateURL != "":
		// A Redis store has no directory.
	case c.StateDir == "":
		return Settings{}, &hostfuncs.Error{Code: hostfuncs.CodeStoreUnavailable, Message: "the handle store has no directory: " + c.Problem}
	default:
		st.StateDir, st.StateRoot = c.StateDir+"/"+DirName, c.StateRoot
	}
	var err *hostfuncs.Error
	pick := func(name string, v int64, env string, def, min, max int64) int64 {
		if err != nil {
			return 0
		}
		if in.Given[name] {
			if v < min || v > max {
				text := func(x int64) string { return strconv.FormatInt(x, 10) }
				if strings.HasSuffix(name, "_ms") {
					text = n.Duration
				}
				err = optionErr(n.Option(name) + " must be between " + text(min) + " and " + text(max) + ", not " + text(v))
			}
			return v
		}
		if env != "" && f.Env[env] != "" {
			d, perr := time.ParseDuration(f.Env[env])
			ms := d.Milliseconds()
			if perr != nil || ms < 1 || ms > max {
				err = optionErr(env + "=" + strconv.Quote(f.Env[env]) + " is not a duration of at least 1ms: use Go duration syntax, e.g. 90s, 30m or 24h")
			}
			return ms
		}
		return def
	}
	const maxMS = 100 * 365 * 24 * hourMS
	st.IdleTTLMS = pick("idle_ttl_ms", in.IdleTTLMS, EnvIdleTTL, DefaultIdleTTLMS, 1, maxMS)
	st.MaxAgeMS = pick("max_age_ms", in.MaxAgeMS, EnvMaxAge, DefaultMaxAgeMS, 1, maxMS)
	st.TombstoneMS = pick("tombstone_ms", in.TombstoneMS, "", DefaultTombstoneMS, 0, maxMS)
	st.MaxHandles = pick("max_handles", in.MaxHandles, "", DefaultMaxHandles, 1, MaxHandles)
	if in.MaxHandlesPerPrincipal == 0 {
		delete(in.Given, "max_handles_per_principal") // 0 asks for the default
	}
	st.MaxHandlesPerPrincipal = pick("max_handles_per_principal", in.MaxHandlesPerPrincipal, "", DefaultPrincipalQuota(st.MaxHandles), 1, max(st.MaxHandles, 1))
	st.MaxValueBytes = pick("max_value_bytes", in.MaxValueBytes, "", DefaultMaxValueBytes, 1, MaxValueBytes)
	st.LockWaitMS = pick("lock_wait_ms", in.LockWaitMS, "", DefaultLockWaitMS, 0, hostfuncs.MaxLockWaitMS)
	st.TimeoutMS = pick("timeout_ms", in.TimeoutMS, EnvTimeout, DefaultTimeoutMS, 1, hostfuncs.MaxEvalTimeoutMS)
	return st, err
}

// DefaultPrincipalQuota is the default max_handles_per_principal of a
// store of maxHandles: a quarter, rounded up (at least 1). A quarter lets
// four busy principals share a full store, while no single one can hold
// more than a quarter of it; the anonymous principal "" (stdio, one client
// per process) gets the same quota (plugin/README.md, "Quotas").
func DefaultPrincipalQuota(maxHandles int64) int64 { return max((maxHandles+3)/4, 1) }

// optionErr is an invalid_option error.
func optionErr(msg string) *hostfuncs.Error {
	return &hostfuncs.Error{Code: hostfuncs.CodeInvalidOption, Message: msg}
}
