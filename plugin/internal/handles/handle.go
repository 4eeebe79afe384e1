package handles

// The handle syntax and the keys derived from a handle (plugin/README.md,
// "Handle store").

import (
	"encoding/base64"
	"encoding/hex"
)

// HandlePrefix starts every handle; "mrh1" names the handle format.
const HandlePrefix = "mrh1_"

// handleBytes is the entropy of a handle: 24 random bytes, 192 bits.
const handleBytes = 24

// HandleLen is the length of every handle in ASCII characters: the prefix
// and the 32 base64url characters of handleBytes.
const HandleLen = len(HandlePrefix) + handleBytes*4/3

// hkdfSalt is the HKDF salt of every key derived from a handle.
const hkdfSalt = "mcp-resume handles v1"

// formatHandle returns the handle of raw: HandlePrefix and base64url
// without padding (24 bytes fill 32 characters exactly, so no character
// has unused bits).
func formatHandle(raw [handleBytes]byte) string {
	return HandlePrefix + base64.RawURLEncoding.EncodeToString(raw[:])
}

// ParseHandle returns the 24 bytes of handle s, and false when s is not
// exactly HandleLen characters: HandlePrefix then base64url ([A-Za-z0-9_-])
// without padding. It does no I/O and never quotes s.
func ParseHandle(s string) ([handleBytes]byte, bool) {
	var raw [handleBytes]byte
	if len(s) != HandleLen || s[:len(HandlePrefix)] != HandlePrefix {
		return raw, false
	}
	n, err := base64.RawURLEncoding.Strict().Decode(raw[:], []byte(s[len(HandlePrefix):]))
	return raw, err == nil && n == handleBytes
}

// keys are what a handle opens: its record's name, its seal and its
// principal tag key, each bound to the app (Store.deriveKeys).
type keys struct {
	hash      [16]byte // the key hash: names the record, keys the index entry
	seal      [32]byte // AES-256-GCM key of the record
	principal [32]byte // HMAC-SHA256 key of the principal tag
}

// ownerLen is the length of an owner id (Store.tags).
const ownerLen = 8

// perShares is a principal's quota per shard (or bucket) of a store of
// shards: quota/shards rounded up, at least 1. Handles fall on shards by
// their random key hash, so a principal at its quota holds about
// perShares in each.
func perShares(quota int64, shards int) int64 {
	return max((quota+int64(shards)-1)/int64(shards), 1)
}

// hashHex is the 32 hex digits of a key hash: the record file is
// "h-" + hashHex.
func hashHex(h [16]byte) string { return hex.EncodeToString(h[:]) }

// shortKey is the first 12 hex digits of a key hash: how log lines and
// list name a handle.
func shortKey(h [16]byte) string { return hex.EncodeToString(h[:6]) }
