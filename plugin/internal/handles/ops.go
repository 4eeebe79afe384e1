package handles

// The per-handle operations: create, get, put, delete, touch and exists
// (hostfuncs/README.md, "Plugin exports", the handle store). Each checks
// its input before any I/O, then works under its shard's lock: lock, read
// the index, read the record, write the record, write the index, unlock;
// except a get that the record alone can answer (hotGet).

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// invalidHandle is the invalid_handle error (HandleLen characters), naming
// the create operation as n does.
func invalidHandle(n resume.Names) *hostfuncs.Error {
	return &hostfuncs.Error{Code: hostfuncs.CodeInvalidHandle, Message: "not a handle: a handle is 37 characters, " + HandlePrefix + " followed by base64url; pass it exactly as " + n.Operation("handle_create") + " returned it"}
}

// request is a handle_* input checked before any I/O.
type request struct {
	in   hostfuncs.HandleInput
	now  int64
	k    keys
	tag  [16]byte
	hash [16]byte
}

// parse decodes and checks a handle_* input: the handle's syntax when
// needHandle (invalid_handle), the principal (invalid_principal) unless
// whole (list, gc: no principal), and the value when needValue
// (invalid_value, value_too_large), in that order.
func (s *Store) parse(input []byte, needHandle, needValue bool, whole ...bool) (*request, *hostfuncs.Error) {
	if !s.opened {
		return nil, &hostfuncs.Error{Code: hostfuncs.CodeNotOpen, Message: "call handles_open before any other handle export"}
	}
	r := &request{}
	if len(whole) == 0 || len(bytes.TrimSpace(input)) > 0 {
		if werr := r.in.Decode(input); werr != nil {
			// The decoder words a per-call option by its wire name first.
			if werr.Code == hostfuncs.CodeInvalidOption {
				werr.Message = s.set.Names.CallOptionMessage(werr.Message)
			}
			return nil, werr
		}
	}
	var raw [handleBytes]byte
	if needHandle {
		var ok bool
		if raw, ok = ParseHandle(r.in.Handle); !ok {
			return nil, invalidHandle(s.set.Names)
		}
	}
	switch {
	case len(whole) > 0:
	case !r.in.PrincipalSet:
		return nil, &hostfuncs.Error{Code: hostfuncs.CodeInvalidPrincipal, Message: "principal missing: give the caller's authenticated subject or client id, or \"\" for anonymous"}
	case len(r.in.Principal) > hostfuncs.MaxPrincipalBytes:
		return nil, &hostfuncs.Error{Code: hostfuncs.CodeInvalidPrincipal, Message: "principal is longer than " + strconv.Itoa(hostfuncs.MaxPrincipalBytes) + " bytes"}
	case !utf8.ValidString(r.in.Principal):
		return nil, &hostfuncs.Error{Code: hostfuncs.CodeInvalidPrincipal, Message: "principal must be valid UTF-8"}
	}
	if needValue {
		switch {
		case !r.in.ValueSet:
			return nil, &hostfuncs.Error{Code: hostfuncs.CodeInvalidValue, Message: "value missing: give the bytes to store, base64-encoded"}
		case int64(len(r.in.Value)) > s.set.MaxValueBytes:
			return nil, &hostfuncs.Error{Code: hostfuncs.CodeValueTooLarge, Message: "value is " + strconv.Itoa(len(r.in.Value)) + " bytes, more than the store's " + s.set.Names.Option("max_value_bytes") + " " + strconv.FormatInt(s.set.MaxValueBytes, 10) + "; nothing was written"}
		}
	}
	if r.in.GenerationSet && r.in.Generation < 1 {
		return nil, optionErr(s.set.Names.CallOption("generation") + " must be a whole number of at least 1 (generations start at 1), not " + strconv.FormatInt(r.in.Generation, 10))
	}
	r.now = nowMS(&r.in)
	if needHandle {
		var werr *hostfuncs.Error
		if r.k, r.tag, werr = s.handleKeys(raw, r.in.Principal); werr != nil {
			return nil, werr
		}
		r.hash = r.k.hash
	}
	return r, nil
}

// notFound is the answer for an unknown handle, another principal's, one
// deleted or past its tombstone period, or a corrupt record: one answer,
// so that handles cannot be probed.
func notFound() *hostfuncs.Error {
	return &hostfuncs.Error{Code: hostfuncs.CodeHandleNotFound, Message: "no such handle (unknown, deleted, expired long ago, or not this principal's)"}
}

// live finds r's live entry in sh, expiring it lazily: its position, or
// handle_not_found, handle_expired (with the reason) or handle_evicted.
func (sh *shard) live(r *request) (int, *hostfuncs.Error) {
	i := sh.find(r.hash)
	if i < 0 || sh.entries[i].Tag != r.tag {
		return -1, notFound()
	}
	e := &sh.entries[i]
	if e.State == stateLive {
		state, died, ok := lapsed(e, sh.now)
		if !ok {
			return i, nil
		}
		sh.expire(i, state, died)
	}
	if sh.buried(e) {
		sh.drop(i)
		return -1, notFound()
	}
	return -1, tombstoneErr(sh.s.set.Names, e.State, e.IdleTTLMS, e.MaxAgeMS)
}

// tombstoneErr is the answer for a tombstone of state (evicted, or
// expired with the lifetime that ran out), on either backend; n names the
// cap.
func tombstoneErr(n resume.Names, state uint8, idleMS, maxAgeMS int64) *hostfuncs.Error {
	switch state {
	case stateEvicted:
		return &hostfuncs.Error{Code: hostfuncs.CodeHandleEvicted, Message: "the handle was evicted: its principal reached its " + n.Option("max_handles_per_principal") + ", or the store its " + n.Option("max_handles") + " while this principal held the most, and this handle was its least recently used"}
	case stateExpiredMaxAge:
		return &hostfuncs.Error{Code: hostfuncs.CodeHandleExpired, Reason: hostfuncs.ReasonMaxAge, Message: "the handle expired: it reached its maximum age of " + msText(maxAgeMS)}
	}
	return &hostfuncs.Error{Code: hostfuncs.CodeHandleExpired, Reason: hostfuncs.ReasonIdle, Message: "the handle expired: it was idle for " + msText(idleMS)}
}

// record reads and opens the record of live entry i: its header, and its
// value unless headerOnly. A missing record drops the entry; a corrupt or
// non-regular one is removed (handle_corrupt), and so is one whose
// generation is below the index's (handle_rollback); each answers
// handle_not_found, as does another principal's record (left untouched).
func (sh *shard) record(r *request, i int, headerOnly bool) (header, []byte, *hostfuncs.Error) {
	var h header
	var v []byte
	var outcome int
	var err error
	if headerOnly {
		var b []byte
		if b, err = sh.s.read(recordName(r.hash), headerLen); err == nil {
			h, outcome = checkHeader(r.tag, b)
		}
	} else {
		// The index knows the value's size: read exactly that and one
		// byte more (a longer file does not open within that bound: read
		// again with the bound of any record), so that no host allocates
		// the largest record for a small value.
		limit := headerLen + int(sh.entries[i].Size) + gcmTagLen + 1
		h, v, outcome, err = sh.s.readRecord(&r.k, r.tag, limit, nil)
		if err == nil && outcome == recordCorrupt && limit < recordLimit {
			h, v, outcome, err = sh.s.readRecord(&r.k, r.tag, recordLimit, nil)
		}
	}
	switch code(err) {
	case "":
	case hostfuncs.CodeNotFound:
		sh.drop(i)
		return header{}, nil, notFound()
	case hostfuncs.CodeUnsafe, hostfuncs.CodePermission:
		// A symlink, a directory, or a record this user cannot read
		// (another owner's file planted in the directory) is unreadable:
		// corrupt, as a token file would be.
		sh.corrupt(r.hash)
		return header{}, nil, notFound()
	default:
		return header{}, nil, sh.s.unavailable("cannot read a record in " + sh.s.set.StateDir + ": " + err.Error())
	}
	switch outcome {
	case recordForeign:
		return h, nil, notFound()
	case recordCorrupt:
		sh.corrupt(r.hash)
		return h, nil, notFound()
	}
	e := &sh.entries[i]
	// The index holds the generation the store last acknowledged; a record
	// below it is an older record put back (a restored backup, a copied
	// file): its value is not the handle's, so it is never answered.
	// (A record above it is a put whose index write did not happen.)
	if h.Generation < e.Generation {
		sh.corrupt(r.hash, " generation="+strconv.FormatInt(h.Generation, 10)+" acknowledged="+strconv.FormatInt(e.Generation, 10))
		return h, nil, notFound()
	}
	e.Generation = h.Generation
	if !headerOnly {
		e.Size = int64(len(v))
	}
	return h, v, nil
}

// refresh moves entry i's last use to now when it moved by at least the
// resolution: get and touch rewrite the index only then, so a busy
// handle's reads do not each write.
func (sh *shard) refresh(i int) {
	e := &sh.entries[i]
	if sh.now-e.LastUsedMS >= resolution(e.IdleTTLMS) {
		e.LastUsedMS = sh.now
		sh.dirty = true
	}
}

// Create is the handle_create export: input {"principal", "value",
// "idle_ttl_ms"?, "max_age_ms"?, "now_ms"?}. It makes a handle of 24 random
// bytes, seals value under it for the principal at generation 1, and
// answers hostfuncs.HandleCreated. At the shard's cap it first evicts the
// least recently used live handle (handle_evicted). Per-handle lifetimes
// may only shorten the store's. Errors: invalid_principal, invalid_value,
// value_too_large, invalid_option, store_unavailable, not_open.
func (s *Store) Create(input []byte) (hostfuncs.HandleCreated, *hostfuncs.Error) {
	r, werr := s.parse(input, false, true)
	if werr != nil {
		return hostfuncs.HandleCreated{}, werr
	}
	idle, werr := lifetime(s.set.Names, "idle_ttl_ms", r.in.IdleTTLSet, r.in.IdleTTLMS, s.set.IdleTTLMS)
	if werr != nil {
		return hostfuncs.HandleCreated{}, werr
	}
	maxAge, werr := lifetime(s.set.Names, "max_age_ms", r.in.MaxAgeSet, r.in.MaxAgeMS, s.set.MaxAgeMS)
	if werr != nil {
		return hostfuncs.HandleCreated{}, werr
	}
	if s.rd == nil {
		if werr := s.begin(r.now, true); werr != nil {
			return hostfuncs.HandleCreated{}, werr
		}
	}
	var raw [handleBytes]byte
	var nonce [12]byte
	if !resume.ReadRandom(raw[:]) || !resume.ReadRandom(nonce[:]) {
		return hostfuncs.HandleCreated{}, s.unavailable("the guest's random source (WASI random_get) failed; no handle was made")
	}
	if r.k, werr = s.deriveKeys(raw, true); werr != nil {
		return hostfuncs.HandleCreated{}, werr
	}
	r.hash = r.k.hash
	var owner [ownerLen]byte
	if r.tag, owner, werr = s.tags(&r.k, r.in.Principal, true); werr != nil {
		return hostfuncs.HandleCreated{}, werr
	}
	s.remember(raw, r.in.Principal, &r.k, r.tag)
	if s.rd != nil {
		created, werr := s.redisCreate(r, idle, maxAge, owner)
		if werr != nil {
			return hostfuncs.HandleCreated{}, werr
		}
		s.log(hostfuncs.LevelDebug, EventCreated, MsgCreated, "key="+shortKey(r.hash))
		return hostfuncs.HandleCreated{Handle: formatHandle(raw), Generation: 1, IdleTTLMS: idle, MaxAgeMS: maxAge, CreatedMS: created}, nil
	}
	hdr := header{Generation: 1, CreatedMS: r.now, IdleTTLMS: idle, MaxAgeMS: maxAge, LastUsedMS: r.now, Tag: r.tag, Nonce: nonce}
	werr = s.withShard(s.shardOf(r.hash), r.now, s.set.LockWaitMS, func(sh *shard) *hostfuncs.Error {
		sh.must = true
		var c gcCounts
		sh.sweep(&c)
		sh.evict(owner)
		if err := s.writeRecord(&r.k, &hdr, r.in.Value); err != nil {
			return s.ioFailure("write a record", err)
		}
		s.held[sh.n] = true
		if i := sh.find(r.hash); i >= 0 {
			sh.drop(i)
		}
		sh.entries = append(sh.entries, entry{Hash: r.hash, State: stateLive, Tag: r.tag, Generation: 1, Size: int64(len(r.in.Value)),
			CreatedMS: r.now, LastUsedMS: r.now, IdleTTLMS: idle, MaxAgeMS: maxAge, Owner: owner})
		sh.dirty = true
		sh.trimTombstones()
		return nil
	})
	if werr != nil {
		return hostfuncs.HandleCreated{}, werr
	}
	s.log(hostfuncs.LevelDebug, EventCreated, MsgCreated, "key="+shortKey(r.hash))
	return hostfuncs.HandleCreated{Handle: formatHandle(raw), Generation: 1, IdleTTLMS: idle, MaxAgeMS: maxAge, CreatedMS: r.now}, nil
}

// lifetime is a handle's lifetime option name (worded as n names it): v
// when set (it may only shorten the store's value store), else store.
func lifetime(n resume.Names, name string, set bool, v, store int64) (int64, *hostfuncs.Error) {
	if !set {
		return store, nil
	}
	if v < 1 || v > store {
		return 0, optionErr(n.CallOption(name) + " may only shorten the store's " + msText(store) + ": give " + n.Duration(1) + " to " + n.Duration(store) + ", not " + n.Duration(v))
	}
	return v, nil
}

// evict makes room for one more live entry of owner: first, while owner
// holds its quota per shard (perOwner) of the shard's live entries, its own
// least recently used becomes an evicted tombstone; then, while the shard
// holds its cap of live entries, the least recently used entry of the
// owner holding the most live entries goes (ties: the owner whose least
// recently used is older). So a principal that floods the store evicts
// only its own handles: another's go only when that one holds as many
// (plugin/README.md, "Quotas"). Each victim's record goes
// (handle_evicted).
func (sh *shard) evict(owner [ownerLen]byte) {
	for {
		victim, own := sh.lru(owner)
		if own < sh.s.perOwner || victim < 0 {
			break
		}
		sh.evictAt(victim)
	}
	for {
		live := int64(0)
		for i := range sh.entries {
			if sh.entries[i].State == stateLive {
				live++
			}
		}
		if live < sh.s.perShard {
			return
		}
		// The victim: the oldest entry of the owner holding the most (a
		// count by owner, quadratic in the shard's few hundred entries,
		// without a map, which would cost plugin.wasm kilobytes).
		victim, most := -1, int64(0)
		for i := range sh.entries {
			e := &sh.entries[i]
			if e.State != stateLive {
				continue
			}
			first, n := sh.lru(e.Owner)
			if first != i {
				continue
			}
			if victim < 0 || n > most || n == most && older(e, &sh.entries[victim]) {
				victim, most = i, n
			}
		}
		if victim < 0 {
			return
		}
		sh.evictAt(victim)
	}
}

// lru returns owner's least recently used live entry (-1 for none) and
// how many live entries owner holds.
func (sh *shard) lru(owner [ownerLen]byte) (int, int64) {
	victim, n := -1, int64(0)
	for i := range sh.entries {
		e := &sh.entries[i]
		if e.State != stateLive || e.Owner != owner {
			continue
		}
		n++
		if victim < 0 || older(e, &sh.entries[victim]) {
			victim = i
		}
	}
	return victim, n
}

// evictAt turns live entry i into an evicted tombstone, removes its
// record and logs handle_evicted.
//
//go:noinline
func (sh *shard) evictAt(i int) {
	e := &sh.entries[i]
	e.State, e.LastUsedMS = stateEvicted, sh.now
	sh.dirty = true
	_ = sh.s.remove(recordName(e.Hash))
	sh.s.log(hostfuncs.LevelInfo, EventEvicted, MsgEvicted, "key="+shortKey(e.Hash))
}

// older reports whether a goes before b in eviction order.
func older(a, b *entry) bool {
	if a.LastUsedMS != b.LastUsedMS {
		return a.LastUsedMS < b.LastUsedMS
	}
	if a.CreatedMS != b.CreatedMS {
		return a.CreatedMS < b.CreatedMS
	}
	return string(a.Hash[:]) < string(b.Hash[:])
}

// trimTombstones keeps at most the per-shard cap of tombstones, dropping
// the one that died first among the owner holding the most, so that one
// principal's flood of evictions does not shorten how long another's
// evicted handles still say so.
func (sh *shard) trimTombstones() {
	for {
		n, first, most := int64(0), -1, int64(0)
		for i := range sh.entries {
			e := &sh.entries[i]
			if e.State == stateLive {
				continue
			}
			n++
			// mine: e's owner's tombstones, and whether e died first of them.
			mine, firstOfOwner := int64(0), true
			for j := range sh.entries {
				o := &sh.entries[j]
				if o.State == stateLive || o.Owner != e.Owner {
					continue
				}
				mine++
				if o.LastUsedMS < e.LastUsedMS || o.LastUsedMS == e.LastUsedMS && j < i {
					firstOfOwner = false
				}
			}
			if firstOfOwner && (first < 0 || mine > most || mine == most && e.LastUsedMS < sh.entries[first].LastUsedMS) {
				first, most = i, mine
			}
		}
		if n <= sh.s.perShard {
			return
		}
		sh.drop(first)
	}
}

// handleOp runs fn on r's live entry under its shard's lock, after begin.
func (s *Store) handleOp(r *request, fn func(sh *shard, i int) *hostfuncs.Error) *hostfuncs.Error {
	if werr := s.begin(r.now, true); werr != nil {
		return werr
	}
	return s.withShard(s.shardOf(r.hash), r.now, s.set.LockWaitMS, func(sh *shard) *hostfuncs.Error {
		i, werr := sh.live(r)
		if werr != nil {
			return werr
		}
		return fn(sh, i)
	})
}

// Get is the handle_get export: input {"handle", "principal", "now_ms"?};
// answers the value and its generation, creation and lifetimes, and
// refreshes the idle time. Errors: invalid_handle, invalid_principal,
// handle_not_found, handle_expired, handle_evicted, store_unavailable,
// not_open.
//
// On the file backend most gets take the hot path (hotGet): the record
// alone, without the shard's lock or index. The slow path, under the
// lock, answers the rest and refreshes the record's last use.
func (s *Store) Get(input []byte) (hostfuncs.HandleValue, *hostfuncs.Error) {
	return s.get(input, nil)
}

// GetKept is Get leaving the value where the host read it, when it can:
// with Keep, a file store's hot get loads only the status
// and the record header of its read_open response, and block is that
// response's host memory block. The value then never enters the guest:
// the caller writes the output's head (HandleValue.EncodeBinaryHead: the
// value is at hostfuncs.HandleValueAt in the block) over the block's
// start and outputs the block whole. Otherwise block is 0 and the value
// is in the answer, as from Get. Errors: those of Get.
func (s *Store) GetKept(input []byte) (hostfuncs.HandleValue, uint64, *hostfuncs.Error) {
	var block uint64
	v, werr := s.get(input, &block)
	return v, block, werr
}

// get is Get, and GetKept when kept is not nil.
func (s *Store) get(input []byte, kept *uint64) (hostfuncs.HandleValue, *hostfuncs.Error) {
	r, werr := s.parse(input, true, false)
	if werr != nil {
		return hostfuncs.HandleValue{}, werr
	}
	if s.rd != nil {
		return s.redisRead(r, "get")
	}
	if werr := s.begin(r.now, true); werr != nil {
		return hostfuncs.HandleValue{}, werr
	}
	if s.callKept == nil {
		kept = nil
	}
	out, werr, done := s.hotGet(r, kept)
	if kept != nil && (!done || werr != nil) {
		s.freeKept(*kept)
		*kept = 0
	}
	if done {
		return out, werr
	}
	return s.slowGet(r)
}

// slowGet is the get that takes the shard's lock (Get): the index checked,
// a version 1 record migrated, the last use written back.
func (s *Store) slowGet(r *request) (hostfuncs.HandleValue, *hostfuncs.Error) {
	var out hostfuncs.HandleValue
	werr := s.handleOp(r, func(sh *shard, i int) *hostfuncs.Error {
		h, v, werr := sh.record(r, i, false)
		if werr != nil {
			return werr
		}
		if h.Version != recordVersion || stale(&h, sh.now) {
			// Migrate a version 1 record, or move the record's last use
			// to now, so that the next gets take the hot path. A failed
			// write leaves the record as it was: the answer stands.
			h.LastUsedMS = sh.now
			if resume.ReadRandom(h.Nonce[:]) {
				_ = s.writeRecord(&r.k, &h, v)
			}
		}
		sh.refresh(i)
		out = valueOf(&h, v)
		return nil
	})
	return out, werr
}

// valueOf is the answer of a get: record header h and value v.
func valueOf(h *header, v []byte) hostfuncs.HandleValue {
	if v == nil {
		v = []byte{}
	}
	return hostfuncs.HandleValue{Value: v, Generation: h.Generation, CreatedMS: h.CreatedMS, IdleTTLMS: h.IdleTTLMS, MaxAgeMS: h.MaxAgeMS}
}

// resolution is how far a handle's last use may lag behind: min(idle TTL /
// 64, 60 s). Get and touch refresh a last use (the index's, the record's)
// only once it is at least this old, so a busy handle's reads do not each
// write, and a get within it of the last refresh is hot (no lock, no
// index). 60 s keeps the gets of a conversation (tool calls seconds to a
// minute apart) on the hot path, and bounds the hot get's rollback window
// and the LRU order's precision to a minute (plugin/README.md, Lifetimes).
func resolution(idleMS int64) int64 { return min(idleMS/64, maxResolutionMS) }

// maxResolutionMS caps the refresh resolution (resolution).
const maxResolutionMS = 60_000

// stale reports whether record header h's last use is at least the
// refresh resolution before now.
func stale(h *header, now int64) bool { return now-h.LastUsedMS >= resolution(h.IdleTTLMS) }

// hotGet answers a get from the record alone, without the shard's lock or
// index: one read, which is consistent because records are only ever
// replaced by rename. It answers (done) when the record opens for r's
// principal as version 2, its last use is within the refresh resolution
// of now (so the handle is live and nothing needs writing) and its
// maximum age has not passed; and handle_not_found for another
// principal's record. Everything else (no record: a tombstone may explain
// it; a record that does not open; version 1; a stale last use; a lapsed
// lifetime; a failed read) is left to the slow path (not done). Its cost
// does not depend on how many handles the store holds.
//
// The hot path does not compare the record's generation with the index's
// (that would read the index): a record put back (a rollback) within the
// refresh resolution of its writing can be answered until it goes stale
// (plugin/README.md, "Handle store", Rollback).
func (s *Store) hotGet(r *request, kept *uint64) (hostfuncs.HandleValue, *hostfuncs.Error, bool) {
	h, v, outcome, err := s.readRecord(&r.k, r.tag, headerLen+int(s.set.MaxValueBytes)+gcmTagLen+1, kept)
	switch {
	case err != nil:
		return hostfuncs.HandleValue{}, nil, false
	case outcome == recordForeign:
		return hostfuncs.HandleValue{}, notFound(), true
	case outcome != recordOK, h.Version != recordVersion, stale(&h, r.now), r.now >= h.CreatedMS+h.MaxAgeMS:
		return hostfuncs.HandleValue{}, nil, false
	}
	return valueOf(&h, v), nil, true
}

// conflict checks r's expected generation against the current one cur:
// a conflict error (logged handle_conflict) when they differ.
func (sh *shard) conflict(r *request, cur int64) *hostfuncs.Error {
	if !r.in.GenerationSet || r.in.Generation == cur {
		return nil
	}
	return sh.s.conflictErr(r, cur)
}

// conflictErr logs handle_conflict and answers conflict with the current
// generation cur, on either backend.
func (s *Store) conflictErr(r *request, cur int64) *hostfuncs.Error {
	s.log(hostfuncs.LevelInfo, EventConflict, MsgConflict, "key="+shortKey(r.hash))
	return &hostfuncs.Error{Code: hostfuncs.CodeConflict, Generation: cur,
		Message: "the handle is at generation " + strconv.FormatInt(cur, 10) + ", not " + strconv.FormatInt(r.in.Generation, 10) + ": read it again and retry; nothing was changed"}
}

// Put is the handle_put export: input {"handle", "principal", "value",
// "generation"?, "now_ms"?}. It replaces the value and answers the new
// generation (current + 1); with "generation" only if that is the current
// one (compare-and-set), without it unconditionally (the last writer
// wins). It refreshes the idle time; creation and lifetimes stay. Errors:
// those of Get, invalid_value, value_too_large, invalid_option, conflict.
func (s *Store) Put(input []byte) (hostfuncs.HandleGeneration, *hostfuncs.Error) {
	r, werr := s.parse(input, true, true)
	if werr != nil {
		return hostfuncs.HandleGeneration{}, werr
	}
	if s.rd != nil {
		return s.redisPut(r)
	}
	var out hostfuncs.HandleGeneration
	werr = s.handleOp(r, func(sh *shard, i int) *hostfuncs.Error {
		h, _, werr := sh.record(r, i, true)
		if werr != nil {
			return werr
		}
		if werr := sh.conflict(r, h.Generation); werr != nil {
			return werr
		}
		h.Generation++
		h.LastUsedMS = sh.now
		if !resume.ReadRandom(h.Nonce[:]) {
			return s.unavailable("the guest's random source (WASI random_get) failed; nothing was written")
		}
		sh.must = true
		if err := s.writeRecord(&r.k, &h, r.in.Value); err != nil {
			return s.ioFailure("write a record", err)
		}
		e := &sh.entries[i]
		e.Generation, e.Size, e.LastUsedMS = h.Generation, int64(len(r.in.Value)), sh.now
		sh.dirty = true
		out.Generation = h.Generation
		return nil
	})
	return out, werr
}

// Delete is the handle_delete export: input {"handle", "principal",
// "generation"?, "now_ms"?}. It removes the record and its entry, leaving
// no tombstone (afterwards handle_not_found); with "generation" only if
// that is the current one. Errors: those of Get, invalid_option, conflict.
func (s *Store) Delete(input []byte) *hostfuncs.Error {
	r, werr := s.parse(input, true, false)
	if werr != nil {
		return werr
	}
	if s.rd != nil {
		_, werr := s.redisHandle("delete", r, expected(r))
		if werr == nil {
			s.log(hostfuncs.LevelDebug, EventDeleted, MsgDeleted, "key="+shortKey(r.hash))
		}
		return werr
	}
	return s.handleOp(r, func(sh *shard, i int) *hostfuncs.Error {
		h, _, werr := sh.record(r, i, true)
		if werr != nil {
			return werr
		}
		if werr := sh.conflict(r, h.Generation); werr != nil {
			return werr
		}
		sh.must = true
		if err := s.remove(recordName(r.hash)); err != nil {
			return s.ioFailure("remove a record", err)
		}
		sh.drop(i)
		s.log(hostfuncs.LevelDebug, EventDeleted, MsgDeleted, "key="+shortKey(r.hash))
		return nil
	})
}

// Touch is the handle_touch export (the updateTTL of state stores): input
// {"handle", "principal", "now_ms"?}; refreshes the idle time only and
// answers the generation and lifetimes. Errors: those of Get.
func (s *Store) Touch(input []byte) (hostfuncs.HandleTouched, *hostfuncs.Error) {
	r, werr := s.parse(input, true, false)
	if werr != nil {
		return hostfuncs.HandleTouched{}, werr
	}
	if s.rd != nil {
		v, werr := s.redisRead(r, "touch")
		return hostfuncs.HandleTouched{Generation: v.Generation, IdleTTLMS: v.IdleTTLMS, MaxAgeMS: v.MaxAgeMS}, werr
	}
	var out hostfuncs.HandleTouched
	werr = s.handleOp(r, func(sh *shard, i int) *hostfuncs.Error {
		h, _, werr := sh.record(r, i, true)
		if werr != nil {
			return werr
		}
		sh.refresh(i)
		out = hostfuncs.HandleTouched{Generation: h.Generation, IdleTTLMS: h.IdleTTLMS, MaxAgeMS: h.MaxAgeMS}
		return nil
	})
	return out, werr
}

// Exists is the handle_exists export: input {"handle", "principal",
// "now_ms"?}; true only when the handle is live and the principal's. It
// never refreshes. Errors: invalid_handle, invalid_principal,
// store_unavailable, not_open (not found, expired and evicted answer
// false).
func (s *Store) Exists(input []byte) (hostfuncs.HandleExists, *hostfuncs.Error) {
	r, werr := s.parse(input, true, false)
	if werr != nil {
		return hostfuncs.HandleExists{}, werr
	}
	if s.rd != nil {
		_, werr = s.redisRead(r, "exists")
	} else {
		werr = s.handleOp(r, func(sh *shard, i int) *hostfuncs.Error {
			_, _, werr := sh.record(r, i, true)
			return werr
		})
	}
	switch {
	case werr == nil:
		return hostfuncs.HandleExists{Exists: true}, nil
	case werr.Code == hostfuncs.CodeHandleNotFound, werr.Code == hostfuncs.CodeHandleExpired, werr.Code == hostfuncs.CodeHandleEvicted:
		return hostfuncs.HandleExists{}, nil
	}
	return hostfuncs.HandleExists{}, werr
}
