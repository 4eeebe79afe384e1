package handles

// The handle syntax and the keys derived from a handle (plugin/README.md,
// "Handle store").

import (
	"crypto/sha256"
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
// principal tag key, each bound to the app.
type keys struct {
	hash      [16]byte // the key hash: names the record, keys the index entry
	seal      [32]byte // AES-256-GCM key of the record
	principal [32]byte // HMAC-SHA256 key of the principal tag
}

// deriveKeys derives the keys of handle bytes raw for app with HKDF-SHA256
// (RFC 5869): salt hkdfSalt, info "<purpose>\x00<app>" for the purposes
// "key", "seal" and "principal" (32 bytes each, one HMAC block of the
// expansion; the key hash is the first 16 of "key").
func deriveKeys(raw [handleBytes]byte, app string) keys {
	var k keys
	prk := hmacSHA256([]byte(hkdfSalt), raw[:])
	key := hmacSHA256(prk[:], []byte("key\x00"+app+"\x01"))
	copy(k.hash[:], key[:])
	k.seal = hmacSHA256(prk[:], []byte("seal\x00"+app+"\x01"))
	k.principal = hmacSHA256(prk[:], []byte("principal\x00"+app+"\x01"))
	return k
}

// tag returns the principal tag stored for principal: the first 16 bytes
// of HMAC-SHA256 under the handle's principal key. Only tags reach a disk.
func (k *keys) tag(principal string) [16]byte {
	m := hmacSHA256(k.principal[:], []byte(principal))
	var t [16]byte
	copy(t[:], m[:])
	return t
}

// hmacSHA256 is HMAC-SHA256 (RFC 2104) of msg under key, over
// crypto/sha256. Written out because crypto/hmac and crypto/hkdf link
// their FIPS checks and SHA-3 into plugin.wasm, about 35 KB of the 300 KB
// the handle store may add; handle_test.go checks it (and deriveKeys)
// against crypto/hmac and crypto/hkdf.
func hmacSHA256(key, msg []byte) [32]byte {
	var pad [sha256.BlockSize]byte
	if len(key) > len(pad) {
		sum := sha256.Sum256(key)
		key = sum[:]
	}
	copy(pad[:], key)
	for i := range pad {
		pad[i] ^= 0x36
	}
	h := sha256.New()
	h.Write(pad[:])
	h.Write(msg)
	inner := h.Sum(nil)
	for i := range pad {
		pad[i] ^= 0x36 ^ 0x5c
	}
	h.Reset()
	h.Write(pad[:])
	h.Write(inner)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// hashHex is the 32 hex digits of a key hash: the record file is
// "h-" + hashHex.
func hashHex(h [16]byte) string { return hex.EncodeToString(h[:]) }

// shortKey is the first 12 hex digits of a key hash: how log lines and
// list name a handle.
func shortKey(h [16]byte) string { return hex.EncodeToString(h[:6]) }
