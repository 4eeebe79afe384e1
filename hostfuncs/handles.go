package hostfuncs

// The handle store's exports (hostfuncs/README.md, "Plugin exports", the
// handle store): names, error codes, inputs and outputs, with hand-written
// codecs in the style of codec.go and decode.go (no encoding/json in the
// guest). A handle store is a plugin instance opened with
// ExportHandlesOpen instead of ExportOpen; values are bytes, standard
// padded base64 in JSON; times are Unix milliseconds, durations
// milliseconds.

import (
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Exports of the handle store.
const (
	ExportHandlesOpen  = "handles_open"
	ExportHandleCreate = "handle_create"
	ExportHandleGet    = "handle_get"
	ExportHandlePut    = "handle_put"
	ExportHandleDelete = "handle_delete"
	ExportHandleTouch  = "handle_touch"
	ExportHandleExists = "handle_exists"
	ExportHandleList   = "handle_list"
	ExportHandleGC     = "handle_gc"
)

// HandleExports lists the handle store's exports, handles_open first.
func HandleExports() []string {
	return []string{ExportHandlesOpen, ExportHandleCreate, ExportHandleGet, ExportHandlePut, ExportHandleDelete,
		ExportHandleTouch, ExportHandleExists, ExportHandleList, ExportHandleGC}
}

// Error codes of the handle store's exports (besides CodeInvalidApp,
// CodeInvalidOption and CodeNotOpen). Messages never hold a handle, a
// value or a principal.
const (
	// CodeInvalidHandle: not the handle syntax; checked before any I/O.
	CodeInvalidHandle = "invalid_handle"
	// CodeInvalidPrincipal: the principal is missing, not a string, longer
	// than MaxPrincipalBytes or not valid UTF-8.
	CodeInvalidPrincipal = "invalid_principal"
	// CodeInvalidValue: the value is missing or not standard base64.
	CodeInvalidValue = "invalid_value"
	// CodeValueTooLarge: the decoded value is longer than the store's
	// max_value_bytes; nothing was written.
	CodeValueTooLarge = "value_too_large"
	// CodeHandleNotFound: unknown, deleted, another principal's, past its
	// tombstone period, or its record was corrupt (and is removed).
	CodeHandleNotFound = "handle_not_found"
	// CodeHandleExpired: idle TTL or max age passed, within the tombstone
	// period; Error.Reason says which.
	CodeHandleExpired = "handle_expired"
	// CodeHandleEvicted: evicted by the capacity cap (least recently used),
	// within the tombstone period.
	CodeHandleEvicted = "handle_evicted"
	// CodeConflict: the expected generation is not the current one;
	// Error.Generation is the current one; nothing changed.
	CodeConflict = "conflict"
	// CodeStoreUnavailable: the handle store's directory cannot be used (an
	// I/O error, a full disk, a shard lock held past lock_wait_ms); the
	// message says what and what to do.
	CodeStoreUnavailable = "store_unavailable"
)

// Reasons of Error.Reason: ReasonIdle and ReasonMaxAge with
// CodeHandleExpired; ReasonAuth with CodeStoreUnavailable when the Redis
// server refused the state URL's credentials (FnEval answered CodeAuth).
const (
	ReasonIdle   = "idle"
	ReasonMaxAge = "max_age"
	ReasonAuth   = "auth"
)

// MaxPrincipalBytes is the longest principal, in UTF-8 bytes.
const MaxPrincipalBytes = 1024

// States of HandleEntry.State.
const (
	HandleLive          = "live"
	HandleExpiredIdle   = "expired_idle"
	HandleExpiredMaxAge = "expired_max_age"
	HandleEvicted       = "evicted"
)

// HandlesOpenInput is the input of ExportHandlesOpen. Zero (or absent)
// numeric fields take the environment's value, then the defaults.
type HandlesOpenInput struct {
	// App is the server application name (the rule of OpenInput.App).
	App string `json:"app"`
	// StateRoot is the state root, as for OpenInput.StateRoot.
	StateRoot     string `json:"state_root,omitempty"`
	IdleTTLMS     int64  `json:"idle_ttl_ms,omitempty"`
	MaxAgeMS      int64  `json:"max_age_ms,omitempty"`
	TombstoneMS   int64  `json:"tombstone_ms,omitempty"`
	MaxHandles    int64  `json:"max_handles,omitempty"`
	MaxValueBytes int64  `json:"max_value_bytes,omitempty"`
	LockWaitMS    int64  `json:"lock_wait_ms,omitempty"`
	// MaxHandlesPerPrincipal is one principal's quota of live handles
	// (1..max_handles). Zero: max_handles/4 rounded up.
	MaxHandlesPerPrincipal int64 `json:"max_handles_per_principal,omitempty"`
	// StateURL selects the Redis backend: redis://[user:password@]host[:port][/db]
	// or rediss://, with at most the query ?cluster=true. Empty: the
	// environment's MCP_RESUME_STATE_URL, else the file backend.
	StateURL string `json:"state_url,omitempty"`
	// TimeoutMS is the Redis backend's deadline per operation (1..60000
	// ms). Zero: MCP_RESUME_STATE_TIMEOUT, else 2000.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Caller is the host's language, as OpenInput.Caller.
	Caller string `json:"caller,omitempty"`
	// AppMissing: as OpenInput.AppMissing. Not part of the JSON.
	AppMissing bool `json:"-"`
	// Given records which numeric members the input held (by JSON name),
	// so that an explicit 0 can be refused. Not part of the JSON.
	Given map[string]bool `json:"-"`
}

// HandlesOpenOutput is the output of ExportHandlesOpen: the settings in
// effect. StateDir is <state_root>/<app dir>/handles; the host fixes it as
// the store's state directory (the confinement rule).
type HandlesOpenOutput struct {
	StateDir      string `json:"state_dir"`
	StateRoot     string `json:"state_root"`
	IdleTTLMS     int64  `json:"idle_ttl_ms"`
	MaxAgeMS      int64  `json:"max_age_ms"`
	TombstoneMS   int64  `json:"tombstone_ms"`
	MaxHandles    int64  `json:"max_handles"`
	MaxValueBytes int64  `json:"max_value_bytes"`
	// MaxHandlesPerPrincipal is one principal's quota of live handles in
	// effect.
	MaxHandlesPerPrincipal int64 `json:"max_handles_per_principal"`
	// Shards is the number of shards a new directory gets for MaxHandles;
	// a directory made before keeps the count in its layout file
	// (HandleListOutput.Shards reports the count in effect).
	Shards int64 `json:"shards"`
	// Backend is BackendFile or BackendRedis.
	Backend string `json:"backend"`
	// StateURL (Redis only) is the server's URL with its password shown
	// as "***": safe to log and show.
	StateURL string `json:"state_url,omitempty"`
	// TimeoutMS (Redis only) is the deadline of each operation.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// Backends of HandlesOpenOutput.Backend.
const (
	BackendFile  = "file"
	BackendRedis = "redis"
)

// HandleInput is the input of every handle_* export; each export reads the
// members it needs. The *Set fields record which members were given (not
// part of the JSON).
type HandleInput struct {
	Handle     string `json:"handle,omitempty"`
	Principal  string `json:"principal"`
	Value      []byte `json:"value,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	IdleTTLMS  int64  `json:"idle_ttl_ms,omitempty"`
	MaxAgeMS   int64  `json:"max_age_ms,omitempty"`
	// NowMS is the clock of this call (Unix milliseconds) when the host's
	// user gave one; absent: the guest's clock.
	NowMS int64 `json:"now_ms,omitempty"`

	HandleSet, PrincipalSet, ValueSet, GenerationSet, IdleTTLSet, MaxAgeSet, NowSet bool `json:"-"`
}

// HandleCreated is the output of ExportHandleCreate.
type HandleCreated struct {
	Handle     string `json:"handle"`
	Generation int64  `json:"generation"`
	IdleTTLMS  int64  `json:"idle_ttl_ms"`
	MaxAgeMS   int64  `json:"max_age_ms"`
	CreatedMS  int64  `json:"created_ms"`
}

// HandleValue is the output of ExportHandleGet.
type HandleValue struct {
	Value      []byte `json:"value"`
	Generation int64  `json:"generation"`
	CreatedMS  int64  `json:"created_ms"`
	IdleTTLMS  int64  `json:"idle_ttl_ms"`
	MaxAgeMS   int64  `json:"max_age_ms"`
}

// HandleGeneration is the output of ExportHandlePut (the new generation).
type HandleGeneration struct {
	Generation int64 `json:"generation"`
}

// HandleTouched is the output of ExportHandleTouch.
type HandleTouched struct {
	Generation int64 `json:"generation"`
	IdleTTLMS  int64 `json:"idle_ttl_ms"`
	MaxAgeMS   int64 `json:"max_age_ms"`
}

// HandleExists is the output of ExportHandleExists.
type HandleExists struct {
	Exists bool `json:"exists"`
}

// HandleEntry is one entry of ExportHandleList: never a value, a handle or
// a principal. Key is the first 12 hex digits of the key hash; Generation
// and Size (the value's bytes) are set for live entries only. AgeMS counts
// from creation, IdleMS from the last use (for a tombstone: from its death).
type HandleEntry struct {
	Key        string `json:"key"`
	State      string `json:"state"`
	Generation int64  `json:"generation,omitempty"`
	Size       int64  `json:"size,omitempty"`
	AgeMS      int64  `json:"age_ms"`
	IdleMS     int64  `json:"idle_ms"`
}

// HandleListOutput is the output of ExportHandleList: the entries, the
// count of live ones and of tombstones, the shard count in effect and the
// bytes of the live values.
type HandleListOutput struct {
	Handles    []HandleEntry `json:"handles"`
	Live       int64         `json:"live"`
	Tombstones int64         `json:"tombstones"`
	Shards     int64         `json:"shards"`
	Bytes      int64         `json:"bytes"`
}

// HandleGCOutput is the output of ExportHandleGC: what it removed, and the
// live handles left.
type HandleGCOutput struct {
	ExpiredIdle       int64 `json:"expired_idle"`
	ExpiredMaxAge     int64 `json:"expired_max_age"`
	TombstonesDropped int64 `json:"tombstones_dropped"`
	OrphansRemoved    int64 `json:"orphans_removed"`
	TempsRemoved      int64 `json:"temps_removed"`
	Live              int64 `json:"live"`
}

// handlesOpenInts are the integer members of HandlesOpenInput, in order.
var handlesOpenInts = []string{"idle_ttl_ms", "max_age_ms", "tombstone_ms", "max_handles", "max_value_bytes", "lock_wait_ms", "timeout_ms", "max_handles_per_principal"}

// HandlesOpenMembers are the members of HandlesOpenInput that DecodeJSON
// reads.
var HandlesOpenMembers = append([]string{"app", "state_root", "state_url", "caller"}, handlesOpenInts...)

// HandleOptions are the members of HandleInput that a caller gives as a
// per-call option (the rest are a call's arguments, or now_ms for tests).
var HandleOptions = []string{"generation", "idle_ttl_ms", "max_age_ms"}

// DecodeJSON sets in from the JSON input of ExportHandlesOpen. Errors: not
// JSON or not an object; an *OptionError for a member of the wrong kind
// (Option "app" for the app). A missing or null app sets AppMissing.
func (in *HandlesOpenInput) DecodeJSON(b []byte) error {
	app := false
	in.Given = map[string]bool{}
	ints := []*int64{&in.IdleTTLMS, &in.MaxAgeMS, &in.TombstoneMS, &in.MaxHandles, &in.MaxValueBytes, &in.LockWaitMS, &in.TimeoutMS, &in.MaxHandlesPerPrincipal}
	err := decodeObject(b, func(d *decoder, name string) error {
		f := field(name, HandlesOpenMembers...)
		switch f {
		case "app":
			app = d.d.PeekKind() != 'n'
			return member("app", "a string", "", func() error { return d.str(&in.App) })
		case "state_root":
			return member("state_root", "a string", "give an absolute path, or leave it out for the default", func() error { return d.str(&in.StateRoot) })
		case "state_url":
			return member("state_url", "a string", "give redis://host:port/db, or leave it out for the file backend", func() error { return d.str(&in.StateURL) })
		case "caller":
			return member("caller", "a string", "", func() error { return d.str(&in.Caller) })
		}
		for i, n := range handlesOpenInts {
			if f == n {
				in.Given[n] = d.d.PeekKind() != 'n'
				return intMember(d, n, ints[i])
			}
		}
		return d.skip()
	})
	in.AppMissing = !app
	return err
}

// intMember reads member name as an integer, or an *OptionError.
func intMember(d *decoder, name string, p *int64) error {
	err := d.int64(p)
	if ke, ok := err.(*kindError); ok {
		return &OptionError{Option: name, Want: "a whole number", Got: kindName(ke.got)}
	}
	if err != nil {
		return &OptionError{Option: name, Want: "a whole number", Got: "a number with a fraction, an exponent or too many digits"}
	}
	return nil
}

// DecodeJSON sets in from the JSON input of a handle_* export. The error
// is an *Error with the code of the member at fault: CodeInvalidHandle
// (handle not a string), CodeInvalidPrincipal (principal not a string, not
// valid UTF-8 or lone surrogates), CodeInvalidValue (value not a base64
// string), CodeInvalidOption (another member of the wrong kind, or input
// that is not a JSON object). Lengths and ranges are the store's to check.
func (in *HandleInput) DecodeJSON(b []byte) *Error {
	var werr *Error
	bad := func(code, msg string) error {
		werr = &Error{Code: code, Message: msg}
		return werr
	}
	err := decodeObject(b, func(d *decoder, name string) error {
		switch field(name, "handle", "principal", "value", "generation", "idle_ttl_ms", "max_age_ms", "now_ms") {
		case "handle":
			in.HandleSet = d.d.PeekKind() != 'n'
			if d.str(&in.Handle) != nil {
				return bad(CodeInvalidHandle, "handle must be a string")
			}
		case "principal":
			return in.decodePrincipal(d, bad)
		case "value":
			in.ValueSet = d.d.PeekKind() != 'n'
			if d.bytes(&in.Value) != nil {
				return bad(CodeInvalidValue, "value must be a string of standard base64 (padded)")
			}
		case "generation":
			in.GenerationSet = d.d.PeekKind() != 'n'
			return intMember(d, "generation", &in.Generation)
		case "idle_ttl_ms":
			in.IdleTTLSet = d.d.PeekKind() != 'n'
			return intMember(d, "idle_ttl_ms", &in.IdleTTLMS)
		case "max_age_ms":
			in.MaxAgeSet = d.d.PeekKind() != 'n'
			return intMember(d, "max_age_ms", &in.MaxAgeMS)
		case "now_ms":
			in.NowSet = d.d.PeekKind() != 'n'
			return intMember(d, "now_ms", &in.NowMS)
		default:
			return d.skip()
		}
		return nil
	})
	switch e := err.(type) {
	case nil:
		return nil
	case *Error:
		return e
	case *OptionError:
		return &Error{Code: CodeInvalidOption, Message: e.Error()}
	}
	if werr != nil {
		return werr
	}
	return &Error{Code: CodeInvalidOption, Message: "input is not a JSON object: " + err.Error()}
}

// decodePrincipal reads the principal from its raw JSON, so that bytes
// that are not UTF-8 (which the decoder would turn into U+FFFD) and lone
// surrogate escapes are refused rather than changed.
func (in *HandleInput) decodePrincipal(d *decoder, bad func(code, msg string) error) error {
	if d.d.PeekKind() == 'n' {
		in.PrincipalSet = false
		return d.skip()
	}
	if d.d.PeekKind() != '"' {
		_ = d.skip()
		return bad(CodeInvalidPrincipal, "principal must be a string")
	}
	raw, err := d.d.ReadValue()
	if err != nil {
		return err
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil || !utf8.Valid(raw) || !utf8.Valid(s) {
		return bad(CodeInvalidPrincipal, "principal must be valid UTF-8 (no lone surrogates)")
	}
	in.Principal, in.PrincipalSet = string(s), true
	return nil
}

// EncodeJSON returns the JSON of in (for hosts and tests; the plugin reads
// it with DecodeJSON). The error is always nil.
func (in HandleInput) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		if in.HandleSet || in.Handle != "" {
			en.str("handle", in.Handle)
		}
		en.str("principal", in.Principal)
		if in.ValueSet || in.Value != nil {
			en.bytes("value", in.Value)
		}
		en.intOmit("generation", in.Generation)
		en.intOmit("idle_ttl_ms", in.IdleTTLMS)
		en.intOmit("max_age_ms", in.MaxAgeMS)
		en.intOmit("now_ms", in.NowMS)
	})
}

// EncodeJSON returns the output of ExportHandlesOpen. The error is always nil.
func (o HandlesOpenOutput) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.str("state_dir", o.StateDir)
		en.str("state_root", o.StateRoot)
		en.int("idle_ttl_ms", o.IdleTTLMS)
		en.int("max_age_ms", o.MaxAgeMS)
		en.int("tombstone_ms", o.TombstoneMS)
		en.int("max_handles", o.MaxHandles)
		en.int("max_value_bytes", o.MaxValueBytes)
		en.int("max_handles_per_principal", o.MaxHandlesPerPrincipal)
		en.int("shards", o.Shards)
		en.str("backend", o.Backend)
		en.strOmit("state_url", o.StateURL)
		en.intOmit("timeout_ms", o.TimeoutMS)
	})
}

// EncodeJSON returns the output of ExportHandleCreate. The error is always nil.
func (o HandleCreated) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.str("handle", o.Handle)
		en.int("generation", o.Generation)
		en.int("idle_ttl_ms", o.IdleTTLMS)
		en.int("max_age_ms", o.MaxAgeMS)
		en.int("created_ms", o.CreatedMS)
	})
}

// EncodeJSON returns the output of ExportHandleGet. The error is always nil.
func (o HandleValue) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.bytes("value", o.Value)
		en.int("generation", o.Generation)
		en.int("created_ms", o.CreatedMS)
		en.int("idle_ttl_ms", o.IdleTTLMS)
		en.int("max_age_ms", o.MaxAgeMS)
	})
}

// EncodeJSON returns the output of ExportHandlePut. The error is always nil.
func (o HandleGeneration) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) { en.int("generation", o.Generation) })
}

// EncodeJSON returns the output of ExportHandleTouch. The error is always nil.
func (o HandleTouched) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.int("generation", o.Generation)
		en.int("idle_ttl_ms", o.IdleTTLMS)
		en.int("max_age_ms", o.MaxAgeMS)
	})
}

// EncodeJSON returns the output of ExportHandleExists. The error is always nil.
func (o HandleExists) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) { en.boolean("exists", o.Exists) })
}

// EncodeJSON returns the output of ExportHandleList. The error is always nil.
func (o HandleListOutput) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.array("handles", o.Handles == nil, len(o.Handles), func(i int) {
			h := o.Handles[i]
			en.begin()
			en.str("key", h.Key)
			en.str("state", h.State)
			en.intOmit("generation", h.Generation)
			en.intOmit("size", h.Size)
			en.int("age_ms", h.AgeMS)
			en.int("idle_ms", h.IdleMS)
			en.end()
		})
		en.int("live", o.Live)
		en.int("tombstones", o.Tombstones)
		en.int("shards", o.Shards)
		en.int("bytes", o.Bytes)
	})
}

// EncodeJSON returns the output of ExportHandleGC. The error is always nil.
func (o HandleGCOutput) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.int("expired_idle", o.ExpiredIdle)
		en.int("expired_max_age", o.ExpiredMaxAge)
		en.int("tombstones_dropped", o.TombstonesDropped)
		en.int("orphans_removed", o.OrphansRemoved)
		en.int("temps_removed", o.TempsRemoved)
		en.int("live", o.Live)
	})
}
