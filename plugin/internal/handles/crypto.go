package handles

// The handle store's cryptography, done by the host (hostfuncs/README.md,
// "mcp_resume_crypto"): the plugin decides every key, nonce, associated
// data and byte layout, and links no AES, GCM, HKDF or HMAC code. A
// failed call (a host that answers invalid_request or io) is
// store_unavailable; read_open and seal_write answer the file codes of
// mcp_resume_read and mcp_resume_write, which the callers word as before.

import (
	"errors"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// cryptoOp runs one mcp_resume_crypto request that involves no file (hkdf,
// hmac, seal, open): the status and output, or store_unavailable (logged)
// naming what. want > 0 is the output length a success must have.
//
//go:noinline
func (s *Store) cryptoOp(req []byte, what string, want int) (byte, []byte, *hostfuncs.Error) {
	status, out, werr := resume.Crypto(s.call, req)
	switch {
	case werr != nil:
		return 0, nil, s.unavailable("the host's mcp_resume_crypto failed to " + what + ": " + werr.Message)
	case status == hostfuncs.CryptoStatusOK && want > 0 && len(out) != want:
		return 0, nil, s.unavailable("the host's mcp_resume_crypto answered " + what + " with the wrong length")
	}
	return status, out, nil
}

// deriveKeys derives the keys of handle bytes raw for the store's app with
// one HKDF-SHA256 batch (RFC 5869): salt hkdfSalt, info
// "<purpose>\x00<app>" for the purposes "key" (16 bytes: the key hash),
// "seal" and "principal" (32 bytes each). With owner, and the store's
// owner key not yet derived, the batch also derives it (ownerOf). Errors:
// store_unavailable when the host's crypto fails.
func (s *Store) deriveKeys(raw [handleBytes]byte, owner bool) (keys, *hostfuncs.Error) {
	var k keys
	salt := []byte(hkdfSalt)
	info := func(purpose string) []byte { return []byte(purpose + "\x00" + s.set.App) }
	items := []hostfuncs.HKDFItem{
		{IKM: raw[:], Salt: salt, Info: info("key"), Length: 16},
		{IKM: raw[:], Salt: salt, Info: info("seal"), Length: 32},
		{IKM: raw[:], Salt: salt, Info: info("principal"), Length: 32},
	}
	owner = owner && s.ownerKey == nil
	if owner {
		items = append(items, hostfuncs.HKDFItem{IKM: []byte(s.set.App), Salt: salt, Info: info("owner"), Length: 32})
	}
	_, out, werr := s.cryptoOp(hostfuncs.HKDFRequest(items...), "derive a handle's keys", 80+32*len(items[3:]))
	if werr != nil {
		return k, werr
	}
	copy(k.hash[:], out[:16])
	copy(k.seal[:], out[16:48])
	copy(k.principal[:], out[48:80])
	if owner {
		s.ownerKey = out[80:112]
	}
	return k, nil
}

// tags returns, with one HMAC-SHA256 batch, the principal tag stored for
// principal (the first 16 bytes of HMAC-SHA256 under the handle's
// principal key; only tags reach a disk) and, with owner, principal's
// owner id in the store's app (the first 8 bytes of HMAC-SHA256 under the
// owner key, which deriveKeys with owner derived). Unlike the tag the
// owner id does not depend on the handle, so the store can count each
// principal's live handles (the quota, plugin/README.md "Quotas"). Its key
// is not secret: whoever reads the store and guesses a principal can
// confirm the guess and see which handles share an owner, never read a
// value. Errors: store_unavailable when the host's crypto fails.
func (s *Store) tags(k *keys, principal string, owner bool) ([16]byte, [ownerLen]byte, *hostfuncs.Error) {
	var t [16]byte
	var o [ownerLen]byte
	items := []hostfuncs.HMACItem{{Key: k.principal[:], Message: []byte(principal)}}
	if owner {
		items = append(items, hostfuncs.HMACItem{Key: s.ownerKey, Message: []byte(principal)})
	}
	_, out, werr := s.cryptoOp(hostfuncs.HMACRequest(items...), "tag a principal", 32*len(items))
	if werr != nil {
		return t, o, werr
	}
	copy(t[:], out)
	if owner {
		copy(o[:], out[32:])
	}
	return t, o, nil
}

// keyCacheSize bounds Store.keyCache: the handles of a few conversations.
const keyCacheSize = 64

// cachedKeys is what deriveKeys and tags answered for a handle's bytes and
// a principal, named by both (name: the bytes, of fixed length, then the
// principal), so that one principal's entry never answers another's call.
type cachedKeys struct {
	name string
	k    keys
	tag  [16]byte
}

// handleKeys returns the keys of handle bytes raw and principal's tag for
// it: from the instance's cache when this instance served that handle for
// that principal lately, else derived (deriveKeys and tags, two host
// calls) and remembered. Both are pure functions of the app, raw and
// principal, so a cached answer is the derived one; the cache saves the
// gets and puts of a conversation's handles two of their three host
// calls. Errors: store_unavailable when the host's crypto fails (nothing
// is cached then).
func (s *Store) handleKeys(raw [handleBytes]byte, principal string) (keys, [16]byte, *hostfuncs.Error) {
	name := string(raw[:]) + principal
	for i := range s.keyCache {
		if c := &s.keyCache[i]; c.name == name {
			return c.k, c.tag, nil
		}
	}
	k, werr := s.deriveKeys(raw, false)
	if werr != nil {
		return k, [16]byte{}, werr
	}
	tag, _, werr := s.tags(&k, principal, false)
	if werr != nil {
		return k, tag, werr
	}
	s.remember(raw, principal, &k, tag)
	return k, tag, nil
}

// remember caches the keys and tag of raw for principal (handleKeys),
// replacing the entries in turn once the cache holds keyCacheSize.
//
//go:noinline
func (s *Store) remember(raw [handleBytes]byte, principal string, k *keys, tag [16]byte) {
	c := cachedKeys{name: string(raw[:]) + principal, k: *k, tag: tag}
	if len(s.keyCache) < keyCacheSize {
		s.keyCache = append(s.keyCache, c)
		return
	}
	s.keyCache[s.keyCacheNext] = c
	s.keyCacheNext = (s.keyCacheNext + 1) % keyCacheSize
}

// indexAADPrefix is the associated data of shard n's sealed index before
// its header: "mcp-resume index v1", a NUL, the app, a NUL and the
// shard's name, so that an index moved to another shard or app fails to
// open.
func (s *Store) indexAADPrefix(n int) []byte {
	return []byte("mcp-resume index v1\x00" + s.set.App + "\x00" + s.shardName(n))
}

// deriveIndexKey derives the key of the store's sealed indexes (one hkdf
// call, once per store): HKDF-SHA256 of the app, salt hkdfSalt, info
// "index\x00<app>". Like the owner key it is not secret (the app name is
// not): the seal detects a torn, damaged or misplaced index, not an
// attacker who can write the directory (records carry their own
// authentication under the handle's key). Errors: store_unavailable.
func (s *Store) deriveIndexKey() *hostfuncs.Error {
	_, out, werr := s.cryptoOp(hostfuncs.HKDFRequest(hostfuncs.HKDFItem{IKM: []byte(s.set.App), Salt: []byte(hkdfSalt), Info: []byte("index\x00" + s.set.App), Length: 32}), "derive the index key", 32)
	if werr == nil {
		copy(s.indexKey[:], out)
	}
	return werr
}

// writeIndex writes shard n's index of entries, sealed (one seal_write):
// header indexMagic and a random nonce, then the entries (encodeEntries)
// sealed under the index key. The error is the host's (a file code), or
// io when the guest's random source fails.
//
//go:noinline
func (s *Store) writeIndex(n int, entries []entry) error {
	var nonce [12]byte
	if !resume.ReadRandom(nonce[:]) {
		return &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: "the guest's random source (WASI random_get) failed"}
	}
	name := indexPrefix + s.shardName(n)
	hdr := append([]byte(indexMagic), nonce[:]...)
	_, out, werr := resume.Crypto(s.call, hostfuncs.SealWriteRequest(&s.indexKey, &nonce, name, resume.TempName(name), hdr, s.indexAADPrefix(n), encodeEntries(entries)))
	switch {
	case werr != nil:
		return werr
	case len(out) != 0:
		return malformed("seal_write")
	}
	return nil
}

// readIndex reads shard n's index (at most limit bytes; one read_open):
// its entries, and whether it opened and decoded. A legacy index (MRI2,
// a SHA-256 checksum) is read again whole and checked by the host's
// sha256 (legacyIndex). The error is the host's (not_found, unsafe, ...).
func (s *Store) readIndex(n, limit int) ([]entry, bool, error) {
	name := indexPrefix + s.shardName(n)
	status, out, werr := resume.Crypto(s.call, hostfuncs.ReadOpenRequest(&s.indexKey, name, uint32(limit), indexHeaderLen, 4, s.indexAADPrefix(n)))
	switch {
	case werr != nil:
		return nil, false, werr
	case status == hostfuncs.CryptoStatusOK && len(out) < indexHeaderLen, status == hostfuncs.CryptoStatusNoOpen && len(out) > indexHeaderLen:
		return nil, false, malformed("read_open")
	case status == hostfuncs.CryptoStatusOK && string(out[:4]) == indexMagic:
		entries, ok := decodeEntries(out[indexHeaderLen:])
		return entries, ok, nil
	case len(out) >= 4 && string(out[:4]) == legacyMagic:
		return s.legacyIndex(name, limit)
	}
	return nil, false, nil
}

// legacyIndex reads the legacy index file name (MRI2: magic, the entries,
// the first 4 bytes of their SHA-256, which the host computes): its
// entries, and whether it is whole. The next write of the shard replaces
// it with a sealed index.
func (s *Store) legacyIndex(name string, limit int) ([]entry, bool, error) {
	data, err := s.read(name, limit)
	if err != nil {
		return nil, false, err
	}
	if len(data) < legacyOverhead || len(data) >= limit {
		return nil, false, nil
	}
	sums, werr := resume.Digest(s.call, data[:len(data)-4])
	if werr != nil {
		return nil, false, werr
	}
	if string(sums[0][:4]) != string(data[len(data)-4:]) {
		return nil, false, nil
	}
	entries, ok := decodeEntries(data[4 : len(data)-4])
	return entries, ok, nil
}

// writeRecord seals value under k for h (its Nonce already random) and
// writes the record file of k's key hash, header version 2 then the
// ciphertext and its tag, through a temporary file and a rename (one
// seal_write). The error is the host's (a file code).
//
//go:noinline
func (s *Store) writeRecord(k *keys, h *header, value []byte) error {
	name := recordName(k.hash)
	hdr := h.appendTo(make([]byte, 0, headerLen))
	req := hostfuncs.SealWriteRequest(&k.seal, &h.Nonce, name, resume.TempName(name), hdr, recordAADPrefix(s.set.App, k.hash, h.Tag), value)
	_, out, werr := resume.Crypto(s.call, req)
	switch {
	case werr != nil:
		return werr
	case len(out) != 0:
		return malformed("seal_write")
	}
	return nil
}

// malformed is the io error of an mcp_resume_crypto answer that breaks
// the contract's layout for op (a host's bug, never taken as an answer).
func malformed(op string) *hostfuncs.Error {
	return &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: "mcp_resume_crypto answered " + op + " with an output of the wrong length"}
}

// readRecord reads the record of k's key hash (at most limit bytes) and
// opens it for principal tag tag with read_open: recordOK with its header
// and value; recordForeign (another principal's: the tag in its header
// differs); recordCorrupt (malformed, does not open, or limit bytes or
// longer, which read_open cannot open); or the host's error (not_found,
// unsafe, ...). A version 1 record costs a second read_open with its
// layout. With kept (Store.GetKept), the response stays in the host's
// memory block *kept and only its status and version 2 header are loaded
// (the value answered is then empty); a response that is not those
// (an error, a version 1 record) answers errKept, and the caller frees
// the block.
func (s *Store) readRecord(k *keys, tag [16]byte, limit int, kept *uint64) (header, []byte, int, error) {
	name := recordName(k.hash)
	prefix := recordAADPrefix(s.set.App, k.hash, tag)
	hl, at := headerLen, nonceAt
	for {
		req := hostfuncs.ReadOpenRequest(&k.seal, name, uint32(limit), uint16(hl), uint16(at), prefix)
		var status byte
		var out []byte
		var werr *hostfuncs.Error
		if kept != nil {
			var head []byte
			head, *kept = s.callKept(hostfuncs.FnCrypto, req, 1+hl)
			if len(head) != 1+hl || head[0] > hostfuncs.CryptoStatusNoOpen {
				return header{}, nil, recordCorrupt, errKept
			}
			status, out = head[0], head[1:]
		} else {
			status, out, werr = resume.Crypto(s.call, req)
		}
		switch {
		case werr != nil:
			return header{}, nil, recordCorrupt, werr
		case status == hostfuncs.CryptoStatusOK && len(out) < hl, status == hostfuncs.CryptoStatusNoOpen && len(out) > hl:
			return header{}, nil, recordCorrupt, malformed("read_open")
		}
		h, outcome := checkHeader(tag, out)
		switch {
		case outcome != recordOK:
			return h, nil, outcome, nil
		case status == hostfuncs.CryptoStatusOK && h.len() == hl:
			return h, out[hl:], recordOK, nil
		case status == hostfuncs.CryptoStatusNoOpen && h.Version == 1 && hl == headerLen && kept == nil:
			hl, at = headerLenV1, headerLenV1-12 // read again with version 1's layout
			continue
		}
		return h, nil, recordCorrupt, nil
	}
}

// errKept is readRecord's answer, with kept, to a response it cannot
// answer from the head: the get reads the record again, whole.
var errKept = errors.New("the record's read_open response is not a version 2 record")
