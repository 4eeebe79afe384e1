package handles

// The index of a shard: one fixed-size entry per live handle or tombstone
// (plugin/README.md, "Handle store", Index).

import (
	"crypto/sha256"
	"encoding/binary"
)

// indexMagic starts every index file.
// (MRI1, before owners, reads as corrupt and is rebuilt from the records.)
const indexMagic = "MRI2"

// entryLen is an index entry's length: key hash 16, state 1, principal tag
// 16, generation 8, size 4, created_ms 8, last_used_ms 8, idle_ttl_ms 8,
// max_age_ms 8, owner 8 (integers big-endian).
const entryLen = 16 + 1 + 16 + 8 + 4 + 8*4 + ownerLen

// indexOverhead is the bytes of an index besides its entries: magic 4,
// count 4, checksum 4 (indexSum).
const indexOverhead = 12

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

// encodeIndex returns the index file of entries: magic, count (u32),
// entries, then the first 4 bytes of the SHA-256
// of all that (indexSum).
func encodeIndex(entries []entry) []byte {
	b := make([]byte, 0, indexOverhead+len(entries)*entryLen)
	b = append(b, indexMagic...)
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
	return append(b, indexSum(b)...)
}

// decodeIndex reads an index file; false when it is malformed: another
// magic, a count that does not match the length, a bad checksum or an unknown
// state. (A key hash twice, which the store never writes, finds its first
// entry.)
func decodeIndex(b []byte) ([]entry, bool) {
	if len(b) < indexOverhead || string(b[:4]) != indexMagic {
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(b[4:]))
	if n > (len(b)-indexOverhead)/entryLen || len(b) != indexOverhead+n*entryLen {
		return nil, false
	}
	body := b[:len(b)-4]
	if string(indexSum(body)) != string(b[len(b)-4:]) {
		return nil, false
	}
	entries := make([]entry, n)
	for i := range entries {
		p := body[8+i*entryLen:]
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

// indexSum is the checksum that ends an index file: the first 4 bytes of
// SHA-256 over the rest. It detects a torn or damaged index, not an
// attacker (who could rewrite the sum as well; records carry their own
// authentication). SHA-256 is already in the plugin; hash/crc32 would add
// its tables.
func indexSum(b []byte) []byte {
	sum := sha256.Sum256(b)
	return sum[:4]
}
