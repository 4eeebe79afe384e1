package host

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// Errors of the handle store (handles.go). Every failure a Handles method
// answers for a reason the plugin gave is a *HandleError, which matches one
// of these with errors.Is; the codes are the plugin's (plugin/README.md,
// the handle store's errors), the same in Python and TypeScript. No message
// ever holds a handle, a value or a principal.
var (
	// ErrInvalidHandle (code invalid_handle): the handle is not a handle
	// this store could have issued ("mrh1_" and 32 base64url characters);
	// checked before any file is touched.
	ErrInvalidHandle = errors.New("invalid handle")
	// ErrHandleNotFound (code handle_not_found): no such handle for this
	// principal: never created, deleted, created by another principal (a
	// wrong principal answers exactly as an unknown handle, so handles
	// cannot be probed), dead for longer than the tombstone period, or its
	// record was corrupt and has been removed.
	ErrHandleNotFound = errors.New("handle not found")
	// ErrHandleExpired (code handle_expired): the handle's idle TTL or
	// maximum age has passed, within the tombstone period;
	// HandleError.Reason says which ("idle" or "max_age").
	ErrHandleExpired = errors.New("handle expired")
	// ErrHandleEvicted (code handle_evicted): the least recently used
	// handle was evicted to keep the store within MaxHandles, within the
	// tombstone period.
	ErrHandleEvicted = errors.New("handle evicted")
	// ErrConflict (code conflict): Put or Delete expected another
	// generation than the current one, which HandleError.Generation holds;
	// nothing changed (compare-and-set).
	ErrConflict = errors.New("generation conflict")
	// ErrValueTooLarge (code value_too_large): the value is longer than
	// MaxValueBytes; nothing was written.
	ErrValueTooLarge = errors.New("value too large")
	// ErrInvalidPrincipal (code invalid_principal): the principal is longer
	// than 1024 bytes or not valid UTF-8.
	ErrInvalidPrincipal = errors.New("invalid principal")
	// ErrStoreUnavailable (code store_unavailable): the handles directory
	// cannot be used (an I/O error, a full disk, a shard lock still held by
	// another process after LockWait); the message says what and what to
	// do. Other handles, and later calls, may well succeed.
	ErrStoreUnavailable = errors.New("handle store unavailable")
)

// sentinels maps the plugin's error codes to the errors HandleError.Is
// matches. invalid_option is this package's ErrInvalidOption (a lifetime
// at Create longer than the store's, a bad option of OpenHandles).
var sentinels = map[string]error{
	hostfuncs.CodeInvalidHandle:    ErrInvalidHandle,
	hostfuncs.CodeHandleNotFound:   ErrHandleNotFound,
	hostfuncs.CodeHandleExpired:    ErrHandleExpired,
	hostfuncs.CodeHandleEvicted:    ErrHandleEvicted,
	hostfuncs.CodeConflict:         ErrConflict,
	hostfuncs.CodeValueTooLarge:    ErrValueTooLarge,
	hostfuncs.CodeInvalidPrincipal: ErrInvalidPrincipal,
	hostfuncs.CodeStoreUnavailable: ErrStoreUnavailable,
	hostfuncs.CodeInvalidOption:    ErrInvalidOption,
}

// HandleError is a failure the handle store answered: the plugin's error
// JSON {"code", "message", "reason"?, "generation"?}. errors.Is matches it
// against the sentinel of its Code (ErrHandleExpired for handle_expired,
// ...); errors.As gives its fields.
type HandleError struct {
	// Code is the plugin's error code: invalid_handle, invalid_principal,
	// invalid_value, value_too_large, invalid_option, handle_not_found,
	// handle_expired, handle_evicted, conflict, store_unavailable, not_open.
	Code string `json:"code"`
	// Message says what failed and what to do, never with a handle, a value
	// or a principal in it.
	Message string `json:"message"`
	// Reason is "idle" or "max_age" for handle_expired, else "".
	Reason string `json:"reason,omitempty"`
	// Generation is the handle's current generation for conflict, else 0.
	Generation int64 `json:"generation,omitempty"`
}

// Error returns "<code>: <message>".
func (e *HandleError) Error() string { return e.Code + ": " + e.Message }

// Is reports whether target is the sentinel of e's Code.
func (e *HandleError) Is(target error) bool {
	s, ok := sentinels[e.Code]
	return ok && s == target
}

// handleError decodes an export's error string (JSON) into a *HandleError;
// a string that is not such JSON becomes an ErrPlugin error.
func handleError(export string, errJSON []byte) error {
	var e HandleError
	if err := json.Unmarshal(errJSON, &e); err != nil || e.Code == "" {
		return fmt.Errorf("%w: %s answered an error that is not the contract's JSON: %q", ErrPlugin, export, errJSON)
	}
	return &e
}
