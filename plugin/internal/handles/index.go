package handles

// The index of a shard: one fixed-size entry per live handle or tombstone
// (plugin/README.md, "Handle store", Index).

import "encoding/binary"

// indexMagic starts every index file the store writes: a sealed index
// (Store.writeIndex). legacyMagic starts the index files of stores before
// it, with a SHA-256 checksum (Store.legacyIndex), still read. (MRI1,
// before owners, reads as corrupt and is rebuilt from the records.)
const (
	indexMagic  = "MRI3"
	legacyMagic = "MRI2"
)

// indexHeaderLen is a sealed index's header: the magic and the nonce.
const indexHeaderLen = 4 + 12

// entryLen is an index entry's length: key hash 16, state 1, principal tag
// 16, generation 8, size 4, created_ms 8, last_used_ms 8, idle_ttl_ms 8,
// max_age_ms 8, owner 8 (integers big-endian).
const entryLen = 16 + 1 + 16 + 8 + 4 + 8*4 + ownerLen

// indexOverhead is the bytes of an index besides its entries: header 16,
// count 4, GCM tag 16.
const indexOverhead = indexHeaderLen + 4 + gcmTagLen

// legacyOverhead is the same of a legacy index: magic 4, count 4,
// checksum 4.
const legacyOverhead = 12

// States of an entry: live, or a tombstone that says why it died.
const (
	stateLive = iota
	stateExpiredIdle
	stateExpiredMaxAge
	stateEvicted
)

// entry is one handle of a shard's index. For a tombstone LastUsedMS is
// when it died.
type entry struct {
	Hash       [16]byte
	State      uint8
	Tag        [16]byte
	Generation int64
	Size       int64
	CreatedMS  int64
	LastUsedMS int64
	IdleTTLMS  int64
	MaxAgeMS   int64
	// Owner is the principal's owner id (ownerOf); zero for an entry
	// rebuilt from its record, which does not carry it.
	Owner [ownerLen]byte
}

// The integers of records and indexes are big-endian. These helpers are
// calls, not inlined stores: binary.BigEndian inlined at each field costs
// plugin.wasm a few kilobytes.

//go:noinline
func append64(b []byte, v int64) []byte {
	for i := 56; i >= 0; i -= 8 {
		b = append(b, byte(uint64(v)>>i))
	}
	return b
}

//go:noinline
func get64(b []byte) int64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return int64(v)
}

// encodeEntries returns the body of an index file: the count (u32) and
// the entries.
func encodeEntries(entries []entry) []byte {
	b := make([]byte, 0, 4+len(entries)*entryLen)
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	for i := range entries {
		e := &entries[i]
		b = append(b, e.Hash[:]...)
		b = append(b, e.State)
		b = append(b, e.Tag[:]...)
		b = append64(b, e.Generation)
		b = binary.BigEndian.AppendUint32(b, uint32(e.Size))
		for _, v := range [...]int64{e.CreatedMS, e.LastUsedMS, e.IdleTTLMS, e.MaxAgeMS} {
			b = append64(b, v)
		}
		b = append(b, e.Owner[:]...)
	}
	return b
}

// decodeEntries reads the body of an index file; false when it is
// malformed: a count that does not match the length or an unknown state.
// (A key hash twice, which the store never writes, finds its first
// entry.)
func decodeEntries(b []byte) ([]entry, bool) {
	if len(b) < 4 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(b))
	if n > (len(b)-4)/entryLen || len(b) != 4+n*entryLen {
		return nil, false
	}
	entries := make([]entry, n)
	for i := range entries {
		p := b[4+i*entryLen:]
		e := &entries[i]
		copy(e.Hash[:], p[:16])
		e.State = p[16]
		copy(e.Tag[:], p[17:33])
		e.Generation = get64(p[33:])
		e.Size = int64(binary.BigEndian.Uint32(p[41:]))
		e.CreatedMS = get64(p[45:])
		e.LastUsedMS = get64(p[53:])
		e.IdleTTLMS = get64(p[61:])
		e.MaxAgeMS = get64(p[69:])
		copy(e.Owner[:], p[77:77+ownerLen])
		if e.State > stateEvicted {
			return nil, false
		}
	}
	return entries, true
}
