package handles

// The record file: one handle's sealed value and its header
// (plugin/README.md, "Handle store", Records).

import "crypto/subtle"

// recordMagic starts every record file; the byte after it is the
// header's version: recordVersion (2) is written, version 1 (without the
// last use) is still read, and rewritten as version 2 by the next get.
const (
	recordMagic   = "MRH1"
	recordVersion = 2
)

// headerLen is the record header's length (version 2): magic 4, version
// 1, generation 8, created_ms 8, idle_ttl_ms 8, max_age_ms 8,
// last_used_ms 8, principal tag 16, nonce 12 (integers big-endian).
// headerLenV1 is version 1's, the same without last_used_ms.
const (
	headerLen   = 4 + 1 + 8*5 + 16 + 12
	headerLenV1 = headerLen - 8
)

// tagAt and nonceAt are where a version 2 header holds the principal tag
// and the nonce.
const (
	tagAt   = 45
	nonceAt = tagAt + 16
)

// gcmTagLen is the AES-GCM tag after the ciphertext.
const gcmTagLen = 16

// aadPrefix starts the associated data of every record.
const aadPrefix = "mcp-resume handle v1\x00"

// header is a record's header.
type header struct {
	Version    byte // 1 or 2; appendTo always writes 2
	Generation int64
	CreatedMS  int64
	IdleTTLMS  int64
	MaxAgeMS   int64
	// LastUsedMS is the handle's last use as the record knows it (version
	// 2; 0 in a version 1 record): the last put, or the last get that
	// refreshed it (at most once per refresh resolution).
	LastUsedMS int64
	Tag        [16]byte
	Nonce      [12]byte
}

// len is the length of the header's bytes in its record.
func (h *header) len() int {
	if h.Version == 1 {
		return headerLenV1
	}
	return headerLen
}

// appendTo appends the header's bytes, as version 2.
func (h *header) appendTo(b []byte) []byte {
	b = append(b, recordMagic...)
	b = append(b, recordVersion)
	for _, v := range [...]int64{h.Generation, h.CreatedMS, h.IdleTTLMS, h.MaxAgeMS, h.LastUsedMS} {
		b = append64(b, v)
	}
	b = append(b, h.Tag[:]...)
	return append(b, h.Nonce[:]...)
}

// parseHeader reads the header of record bytes b (version 1 or 2); false
// when b is too short for its header, or has another magic or version, or
// impossible values.
func parseHeader(b []byte) (header, bool) {
	var h header
	if len(b) < headerLenV1 || string(b[:4]) != recordMagic || b[4] < 1 || b[4] > recordVersion {
		return h, false
	}
	h.Version = b[4]
	at := 37 // the tag, in version 1
	if h.Version == 2 {
		if len(b) < headerLen {
			return h, false
		}
		h.LastUsedMS = get64(b[37:])
		at = tagAt
	}
	h.Generation = get64(b[5:])
	h.CreatedMS = get64(b[13:])
	h.IdleTTLMS = get64(b[21:])
	h.MaxAgeMS = get64(b[29:])
	copy(h.Tag[:], b[at:at+16])
	copy(h.Nonce[:], b[at+16:at+28])
	return h, h.Generation >= 1 && h.IdleTTLMS > 0 && h.MaxAgeMS > 0
}

// recordAADPrefix is a record's associated data before its header bytes:
// aadPrefix, the app, a NUL, the key hash and the principal tag. The whole
// associated data is that and the header bytes (generation, lifetimes,
// last use and nonce included), so that a record moved to another name,
// another generation, other lifetimes or another app fails to open.
func recordAADPrefix(app string, hash, tag [16]byte) []byte {
	b := make([]byte, 0, len(aadPrefix)+len(app)+1+32+headerLen)
	b = append(b, aadPrefix...)
	b = append(b, app...)
	b = append(b, 0)
	b = append(b, hash[:]...)
	return append(b, tag[:]...)
}

// Outcomes of reading a record (checkHeader, Store.readRecord).
const (
	recordOK      = iota
	recordForeign // the principal tag differs: another principal's handle
	recordCorrupt // malformed, or the seal does not open
)

// checkHeader checks the header of record bytes b (version 1 or 2)
// against principal tag tag: recordForeign (the tag differs; the record
// must stay as it is), recordCorrupt (malformed: it must be removed), or
// recordOK with the header. It does not open the seal (readRecord does;
// put, delete, touch and exists need no value); b may be the header alone.
func checkHeader(tag [16]byte, b []byte) (header, int) {
	h, ok := parseHeader(b)
	if !ok {
		return h, recordCorrupt
	}
	if subtle.ConstantTimeCompare(h.Tag[:], tag[:]) != 1 {
		return h, recordForeign
	}
	return h, recordOK
}
