package handles

// The record file: one handle's sealed value and its header
// (plugin/README.md, "Handle store", Records).

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
)

// recordMagic and recordVersion start every record file.
const (
	recordMagic   = "MRH1"
	recordVersion = 1
)

// headerLen is the record header's length: magic 4, version 1,
// generation 8, created_ms 8, idle_ttl_ms 8, max_age_ms 8, principal tag
// 16, nonce 12 (integers big-endian).
const headerLen = 4 + 1 + 8*4 + 16 + 12

// gcmTagLen is the AES-GCM tag after the ciphertext.
const gcmTagLen = 16

// aadPrefix starts the associated data of every record.
const aadPrefix = "mcp-resume handle v1\x00"

// header is a record's header.
type header struct {
	Generation int64
	CreatedMS  int64
	IdleTTLMS  int64
	MaxAgeMS   int64
	Tag        [16]byte
	Nonce      [12]byte
}

// appendHeader appends the header's bytes.
func (h *header) appendTo(b []byte) []byte {
	b = append(b, recordMagic...)
	b = append(b, recordVersion)
	for _, v := range [...]int64{h.Generation, h.CreatedMS, h.IdleTTLMS, h.MaxAgeMS} {
		b = append64(b, v)
	}
	b = append(b, h.Tag[:]...)
	return append(b, h.Nonce[:]...)
}

// parseHeader reads the header of record bytes b; false when b is too
// short for a header and a GCM tag, or has another magic or version.
func parseHeader(b []byte) (header, bool) {
	var h header
	if len(b) < headerLen || string(b[:4]) != recordMagic || b[4] != recordVersion {
		return h, false
	}
	h.Generation = get64(b[5:])
	h.CreatedMS = get64(b[13:])
	h.IdleTTLMS = get64(b[21:])
	h.MaxAgeMS = get64(b[29:])
	copy(h.Tag[:], b[37:53])
	copy(h.Nonce[:], b[53:65])
	return h, h.Generation >= 1 && h.IdleTTLMS > 0 && h.MaxAgeMS > 0
}

// aad is the associated data of a record: aadPrefix, the app, a NUL, the
// key hash, the principal tag and the header bytes (generation, lifetimes
// and nonce included), so that a record moved to another name, another
// generation, other lifetimes or another app fails to open.
func aad(app string, hash [16]byte, hdr []byte) []byte {
	b := make([]byte, 0, len(aadPrefix)+len(app)+1+16+len(hdr))
	b = append(b, aadPrefix...)
	b = append(b, app...)
	b = append(b, 0)
	b = append(b, hash[:]...)
	b = append(b, hdr[37:53]...) // the principal tag
	return append(b, hdr...)
}

// gcm returns the AES-256-GCM of key.
func gcm(key [32]byte) cipher.AEAD {
	block, _ := aes.NewCipher(key[:])
	a, _ := cipher.NewGCM(block)
	return a
}

// sealRecord returns the record file of value under k for app: h's
// header (its Nonce already random) and the ciphertext with its tag.
func sealRecord(k *keys, app string, h header, value []byte) []byte {
	b := make([]byte, 0, headerLen+len(value)+gcmTagLen)
	b = h.appendTo(b)
	return gcm(k.seal).Seal(b, h.Nonce[:], value, aad(app, k.hash, b[:headerLen]))
}

// Outcomes of openRecord.
const (
	recordOK      = iota
	recordForeign // the principal tag differs: another principal's handle
	recordCorrupt // malformed, or the seal does not open
)

// openRecord checks record bytes b against principal tag tag and opens it
// with k: recordForeign (the tag differs; the record must stay as it is),
// recordCorrupt (it must be removed), or recordOK with the header and the
// value. With headerOnly it checks the header and the tag but does not
// decrypt (put, delete and touch need no value); b may then be the header
// alone.
func openRecord(k *keys, app string, tag [16]byte, b []byte, headerOnly bool) (header, []byte, int) {
	h, ok := parseHeader(b)
	if !ok {
		return h, nil, recordCorrupt
	}
	if subtle.ConstantTimeCompare(h.Tag[:], tag[:]) != 1 {
		return h, nil, recordForeign
	}
	if headerOnly {
		return h, nil, recordOK
	}
	if len(b) < headerLen+gcmTagLen {
		return h, nil, recordCorrupt
	}
	v, err := gcm(k.seal).Open(nil, h.Nonce[:], b[headerLen:], aad(app, k.hash, b[:headerLen]))
	if err != nil {
		return h, nil, recordCorrupt
	}
	return h, v, recordOK
}
