package host

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// The errors of both stores, one family (docs/API.md, "Errors"). Every
// failure the plugin answered, to Open, OpenHandles or any method, is an
// *Error carrying the plugin's code, which matches the sentinel of that
// code with errors.Is; errors.As gives its fields. The codes are the
// plugin's (plugin/README.md), the same in Python and TypeScript. No
// message ever holds a token, a handle, a value or a principal.
var (
	// ErrInvalidApp (code invalid_app): the plugin refused the app name
	// given to Open or OpenHandles: it must be 1–64 of [A-Za-z0-9._-]
	// starting with a letter or digit.
	ErrInvalidApp = errors.New("invalid app name")
	// ErrInvalidOption (code invalid_option): the plugin refused an
	// option of Open or OpenHandles (the message names it and what to
	// give), a lifetime at Create longer than the store's, or an
	// IfGeneration below 1.
	ErrInvalidOption = errors.New("invalid option")
	// ErrPlugin: the plugin cannot be compiled or instantiated, speaks
	// another ABI version than this package, or failed without an answer.
	// It is not an *Error (there is no code); the error wraps it.
	ErrPlugin = errors.New("mcp-resume plugin unusable")
	// ErrInvalidToken (code invalid_token): Store.Store was given a token
	// that is not 1–4096 bytes of visible ASCII (0x21–0x7E); nothing is
	// written.
	ErrInvalidToken = errors.New("invalid token")
	// ErrInvalidHandle (code invalid_handle): the handle is not a handle
	// this store could have issued ("mrh1_" and 32 base64url characters);
	// checked before any file is touched.
	ErrInvalidHandle = errors.New("invalid handle")
	// ErrInvalidPrincipal (code invalid_principal): the principal is longer
	// than 1024 bytes or not valid UTF-8.
	ErrInvalidPrincipal = errors.New("invalid principal")
	// ErrInvalidValue (code invalid_value): the value cannot be carried to
	// the plugin. The Go API always sends bytes, so the plugin does not
	// answer it here; an application may use it for a value of the wrong
	// shape (the example servers do).
	ErrInvalidValue = errors.New("invalid value")
	// ErrValueTooLarge (code value_too_large): the value is longer than
	// MaxValueBytes; nothing was written.
	ErrValueTooLarge = errors.New("value too large")
	// ErrHandleNotFound (code handle_not_found): no such handle for this
	// principal: never created, deleted, created by another principal (a
	// wrong principal answers exactly as an unknown handle, so handles
	// cannot be probed), dead for longer than the tombstone period, or its
	// record was corrupt and has been removed.
	ErrHandleNotFound = errors.New("handle not found")
	// ErrHandleExpired (code handle_expired): the handle's idle TTL or
	// maximum age has passed, within the tombstone period; Error.Reason
	// says which ("idle" or "max_age").
	ErrHandleExpired = errors.New("handle expired")
	// ErrHandleEvicted (code handle_evicted): the handle was its
	// principal's least recently used and was evicted to keep the principal
	// within MaxHandlesPerPrincipal, or the store within MaxHandles while
	// its principal held the most; answered within the tombstone period.
	ErrHandleEvicted = errors.New("handle evicted")
	// ErrConflict (code conflict): Put or Delete with IfGeneration found
	// another generation, which Error.Generation holds; nothing changed
	// (compare-and-set).
	ErrConflict = errors.New("generation conflict")
	// ErrStoreUnavailable (code store_unavailable): the store cannot be
	// used (an I/O error, a full disk, a shard lock still held by another
	// process after LockWait, a Redis server that does not answer or
	// refuses the credentials, no state root); the message says what and
	// what to do, and Error.Reason may say more ("auth": the Redis server
	// refused the credentials). Other handles, and later calls, may well
	// succeed.
	ErrStoreUnavailable = errors.New("store unavailable")
)

// sentinels maps the plugin's error codes to the errors Error.Is matches.
var sentinels = map[string]error{
	hostfuncs.CodeInvalidApp:       ErrInvalidApp,
	hostfuncs.CodeInvalidOption:    ErrInvalidOption,
	hostfuncs.CodeInvalidToken:     ErrInvalidToken,
	hostfuncs.CodeInvalidHandle:    ErrInvalidHandle,
	hostfuncs.CodeInvalidPrincipal: ErrInvalidPrincipal,
	hostfuncs.CodeInvalidValue:     ErrInvalidValue,
	hostfuncs.CodeValueTooLarge:    ErrValueTooLarge,
	hostfuncs.CodeHandleNotFound:   ErrHandleNotFound,
	hostfuncs.CodeHandleExpired:    ErrHandleExpired,
	hostfuncs.CodeHandleEvicted:    ErrHandleEvicted,
	hostfuncs.CodeConflict:         ErrConflict,
	hostfuncs.CodeStoreUnavailable: ErrStoreUnavailable,
}

// Error is a failure either store answered: the plugin's error JSON
// {"code", "message", "reason"?, "generation"?}. errors.Is matches it
// against the sentinel of its Code (ErrInvalidApp for invalid_app,
// ErrHandleExpired for handle_expired, ...); errors.As gives its fields.
type Error struct {
	// Code is the plugin's error code: invalid_app, invalid_option,
	// invalid_token, invalid_handle, invalid_principal, invalid_value,
	// value_too_large, handle_not_found, handle_expired, handle_evicted,
	// conflict, store_unavailable (and not_open, an export called before
	// open, which this package never does).
	Code string `json:"code"`
	// Message says what failed and what to do, never with a token, a
	// handle, a value or a principal in it.
	Message string `json:"message"`
	// Reason is "idle" or "max_age" for handle_expired, "auth" for
	// store_unavailable when the Redis server refused the credentials,
	// else "".
	Reason string `json:"reason,omitempty"`
	// Generation is the handle's current generation for conflict, else 0.
	Generation int64 `json:"generation,omitempty"`
}

// Error returns the plugin's message, which already says what was wrong
// and what to do (for example `invalid app name "a/b": use 1-64 ...`).
func (e *Error) Error() string { return e.Message }

// Is reports whether target is the sentinel of e's Code.
func (e *Error) Is(target error) bool {
	s, ok := sentinels[e.Code]
	return ok && s == target
}

// errorFrom is the *Error of an answered failure.
func errorFrom(e *hostfuncs.Error) *Error {
	return &Error{Code: e.Code, Message: e.Message, Reason: e.Reason, Generation: e.Generation}
}

// decodeError decodes an export's error string (JSON) into an *Error; a
// string that is not such JSON becomes an ErrPlugin error.
func decodeError(export string, errJSON []byte) error {
	var e Error
	if err := json.Unmarshal(errJSON, &e); err != nil || e.Code == "" {
		return fmt.Errorf("%w: %s answered an error that is not the contract's JSON: %q", ErrPlugin, export, errJSON)
	}
	return &e
}
