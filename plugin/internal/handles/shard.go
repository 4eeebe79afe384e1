package handles

// A shard under its lock: its index loaded (or rebuilt from the records),
// changed by an operation, and written back (plugin/README.md, "Handle
// store", Shards and Index).

import (
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// recordLimit bounds every record read: a header, the largest value any
// store allows, the GCM tag, and one byte more to see a file too long.
const recordLimit = headerLen + MaxValueBytes + gcmTagLen + 1

// shard is one shard's index while its lock is held.
type shard struct {
	s       *Store
	n       int
	now     int64
	entries []entry
	dirty   bool // entries changed: write the index back
	must    bool // the index write is part of the operation (create, put, delete)
}

// shardOf is the shard of key hash h: its first two bytes (the first the
// low one) modulo the shard count (a power of two). For at most 256
// shards that is the first byte modulo the count, the rule of every
// directory made before more shards were allowed: their records are
// found where they were written.
func (s *Store) shardOf(h [16]byte) int { return (int(h[0]) | int(h[1])<<8) & (s.shards - 1) }

// recordName is the record file of key hash h.
func recordName(h [16]byte) string { return recordPrefix + hashHex(h) }

// parseRecordName returns the key hash of a record file name: "h-" and
// 32 lowercase hex digits. (Decoded by hand: encoding/hex's error type
// links fmt into the plugin.)
func parseRecordName(name string) ([16]byte, bool) {
	var h [16]byte
	rest, ok := strings.CutPrefix(name, recordPrefix)
	if !ok || len(rest) != 32 {
		return h, false
	}
	for i := 0; i < 32; i++ {
		c := rest[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			return h, false
		}
		h[i/2] |= c << (4 * (1 - i%2))
	}
	return h, true
}

// withShard runs fn on shard n at time now under the shard's lock (waiting
// up to waitMS), then writes the index if fn changed it and releases the
// lock, on every path. A failed index write fails the call only when fn
// set must; otherwise (a refreshed last use) it is left for the next write.
func (s *Store) withShard(n int, now, waitMS int64, fn func(sh *shard) *hostfuncs.Error) *hostfuncs.Error {
	lock := lockPrefix + s.shardName(n)
	if werr := s.lock(lock, waitMS, "shard "+s.shardName(n)); werr != nil {
		return werr
	}
	defer s.unlock(lock)
	return s.inShard(n, now, fn)
}

// inShard is withShard with the lock already held.
func (s *Store) inShard(n int, now int64, fn func(sh *shard) *hostfuncs.Error) *hostfuncs.Error {
	sh := &shard{s: s, n: n, now: now}
	if werr := sh.load(); werr != nil {
		return werr
	}
	werr := fn(sh)
	if sh.dirty {
		if err := s.writeIndex(n, sh.entries); err != nil && sh.must && werr == nil {
			werr = s.ioFailure("write the index of shard "+s.shardName(n), err)
		}
	}
	return werr
}

// indexLimit bounds an index read: room for four times the per-shard cap
// (live entries and tombstones, with room for a cap lowered since), and a
// byte more to see a file too long (which does not open); at most the
// hosts' read bound, hostfuncs.MaxReadLimit (a directory of few shards
// opened with a large max_handles).
func (sh *shard) indexLimit() int {
	return int(min(int64(indexOverhead)+4*sh.s.perShard*entryLen+1, hostfuncs.MaxReadLimit))
}

// load reads the shard's index (sealed, or legacy: Store.readIndex). A
// missing index is an empty one unless the first call's listing saw
// records of the shard (Store.held); one that does not open or decode
// (torn, damaged, moved from another shard, too long), a non-regular
// file, or one missing beside records is rebuilt from the records.
func (sh *shard) load() *hostfuncs.Error {
	entries, ok, err := sh.s.readIndex(sh.n, sh.indexLimit())
	switch code(err) {
	case "":
		if ok {
			sh.entries = entries
			return nil
		}
		return sh.rebuild(false)
	case hostfuncs.CodeNotFound:
		if !sh.s.held[sh.n] {
			return nil // a shard never written (a record written since without its index is an orphan)
		}
		return sh.rebuild(true)
	case hostfuncs.CodeUnsafe:
		return sh.rebuild(false)
	}
	return sh.s.unavailable("cannot read the index of shard " + sh.s.shardName(sh.n) + " in " + sh.s.set.StateDir + ": " + err.Error())
}

// rebuild makes the index from the shard's records (a listing, and each
// record's header): each becomes a live entry last used when its header
// says (version 2), or now minus its file's age (version 1). A record
// that does not parse is removed as corrupt. With
// missing and no record it is the empty index of a new shard, silently.
func (sh *shard) rebuild(missing bool) *hostfuncs.Error {
	files, err := sh.s.listDir()
	if err != nil {
		return sh.s.unavailable("cannot list " + sh.s.set.StateDir + " to rebuild the index of shard " + sh.s.shardName(sh.n) + ": " + err.Error())
	}
	sh.entries = nil
	found := false
	for _, f := range files {
		h, ok := parseRecordName(f.Name)
		if !ok || sh.s.shardOf(h) != sh.n {
			continue
		}
		found = true
		b, err := sh.s.read(f.Name, recordLimit)
		hdr, hok := parseHeader(b)
		if err != nil || !hok || len(b) < hdr.len()+gcmTagLen || len(b) >= recordLimit {
			if code(err) == "" || code(err) == hostfuncs.CodeUnsafe {
				sh.corrupt(h)
			}
			continue
		}
		used := hdr.LastUsedMS // version 2; version 1 has only its file's age
		if hdr.Version == 1 {
			used = sh.now - max(f.AgeSeconds, 0)*1000
		}
		sh.entries = append(sh.entries, entry{
			Hash: h, State: stateLive, Tag: hdr.Tag, Generation: hdr.Generation, Size: int64(len(b) - hdr.len() - gcmTagLen),
			CreatedMS: hdr.CreatedMS, LastUsedMS: used, IdleTTLMS: hdr.IdleTTLMS, MaxAgeMS: hdr.MaxAgeMS,
		})
	}
	if missing && !found {
		return nil
	}
	sh.dirty = true
	sh.s.log(hostfuncs.LevelWarn, EventIndexRebuilt, MsgIndexRebuilt, "shard="+sh.s.shardName(sh.n)+" records="+strconv.Itoa(len(sh.entries)))
	return nil
}

// find returns the position of key hash h in the index, -1 for none.
func (sh *shard) find(h [16]byte) int {
	for i := range sh.entries {
		if sh.entries[i].Hash == h {
			return i
		}
	}
	return -1
}

// drop removes entry i from the index.
//
//go:noinline
func (sh *shard) drop(i int) {
	sh.entries = append(sh.entries[:i], sh.entries[i+1:]...)
	sh.dirty = true
}

// corrupt removes the record of h and its entry, and logs handle_corrupt
// (spec 000's rule for a corrupt token file, applied to records); with
// rollback (the text after the key in the detail: the record's sealed
// generation and the acknowledged one) it logs handle_rollback instead: a
// record older than the store acknowledged goes the same way.
//
//go:noinline
func (sh *shard) corrupt(h [16]byte, rollback ...string) {
	_ = sh.s.remove(recordName(h))
	if i := sh.find(h); i >= 0 {
		sh.drop(i)
	}
	event, msg, detail := EventCorrupt, MsgCorrupt, "key="+shortKey(h)
	if len(rollback) > 0 {
		event, msg, detail = EventRollback, MsgRollback, detail+rollback[0]
	}
	sh.s.log(hostfuncs.LevelWarn, event, msg, detail)
}

// lapsed reports whether live entry e has expired at now: the state it
// then has and when it died (the deadline passed first). An entry expires
// when now reaches last use + idle TTL, or creation + max age.
func lapsed(e *entry, now int64) (uint8, int64, bool) {
	idleEnd, maxEnd := e.LastUsedMS+e.IdleTTLMS, e.CreatedMS+e.MaxAgeMS
	switch {
	case now >= maxEnd && maxEnd <= idleEnd:
		return stateExpiredMaxAge, maxEnd, true
	case now >= idleEnd:
		return stateExpiredIdle, idleEnd, true
	case now >= maxEnd:
		return stateExpiredMaxAge, maxEnd, true
	}
	return stateLive, 0, false
}

// expire turns live entry i into a tombstone of state, dead since died,
// removes its record and logs handle_expired.
//
//go:noinline
func (sh *shard) expire(i int, state uint8, died int64) {
	e := &sh.entries[i]
	e.State, e.LastUsedMS = state, died
	sh.dirty = true
	_ = sh.s.remove(recordName(e.Hash))
	reason := hostfuncs.ReasonIdle
	if state == stateExpiredMaxAge {
		reason = hostfuncs.ReasonMaxAge
	}
	sh.s.log(hostfuncs.LevelInfo, EventExpired, MsgExpired, "key="+shortKey(e.Hash)+" reason="+reason)
}

// buried reports whether tombstone e's period is over at now.
func (sh *shard) buried(e *entry) bool { return sh.now-e.LastUsedMS >= sh.s.set.TombstoneMS }

// gcCounts are what a sweep did.
type gcCounts struct {
	expiredIdle, expiredMaxAge, dropped int64
}

// sweep expires every lapsed live entry and drops every tombstone whose
// period is over.
func (sh *shard) sweep(r *gcCounts) {
	for i := 0; i < len(sh.entries); i++ {
		e := &sh.entries[i]
		if e.State != stateLive {
			if sh.buried(e) {
				sh.drop(i)
				i--
				r.dropped++
			}
			continue
		}
		if state, died, ok := lapsed(e, sh.now); ok {
			sh.expire(i, state, died)
			if state == stateExpiredIdle {
				r.expiredIdle++
			} else {
				r.expiredMaxAge++
			}
			if sh.buried(&sh.entries[i]) {
				sh.drop(i)
				i--
				r.dropped++
			}
		}
	}
}
