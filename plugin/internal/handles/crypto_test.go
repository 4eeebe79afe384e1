package handles

// Reference cryptography for the tests, on Go's standard library: what
// the store asks the host to compute (crypto.go), written out directly, so
// that the tests check the requests the store builds against the README's
// derivations, and can make records and sealed values of their own.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/cryptohost"
)

// deriveKeys is the reference of Store.deriveKeys: HKDF-SHA256 of raw,
// salt hkdfSalt, info "<purpose>\x00<app>".
func deriveKeys(raw [handleBytes]byte, app string) keys {
	var k keys
	derive := func(dst []byte, purpose string) {
		out, _ := hkdf.Key(sha256.New, raw[:], []byte(hkdfSalt), purpose+"\x00"+app, len(dst))
		copy(dst, out)
	}
	derive(k.hash[:], "key")
	derive(k.seal[:], "seal")
	derive(k.principal[:], "principal")
	return k
}

// tag is the reference principal tag: HMAC-SHA256 under the principal
// key, its first 16 bytes.
func (k *keys) tag(principal string) [16]byte {
	m := hmac.New(sha256.New, k.principal[:])
	m.Write([]byte(principal))
	var t [16]byte
	copy(t[:], m.Sum(nil))
	return t
}

// ownerOf is the reference owner id of principal in app.
func ownerOf(app, principal string) [ownerLen]byte {
	key, _ := hkdf.Key(sha256.New, []byte(app), []byte(hkdfSalt), "owner\x00"+app, 32)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(principal))
	var o [ownerLen]byte
	copy(o[:], m.Sum(nil))
	return o
}

// gcm is AES-256-GCM under key.
func gcm(key [32]byte) cipher.AEAD {
	block, _ := aes.NewCipher(key[:])
	a, _ := cipher.NewGCM(block)
	return a
}

// aad is a record's whole associated data: the prefix and the header.
func aad(app string, hash, tag [16]byte, hdr []byte) []byte {
	return append(recordAADPrefix(app, hash, tag), hdr...)
}

// sealRecord is the reference record file (version 2) of value.
func sealRecord(k *keys, app string, h header, value []byte) []byte {
	b := h.appendTo(nil)
	return gcm(k.seal).Seal(b, h.Nonce[:], value, aad(app, k.hash, h.Tag, b))
}

// memFiles are files in memory, for cryptohost's read_open and seal_write.
type memFiles map[string][]byte

func (m memFiles) ReadFile(name string, limit int) ([]byte, *hostfuncs.Error) {
	b, ok := m[name]
	if !ok {
		return nil, &hostfuncs.Error{Code: hostfuncs.CodeNotFound, Message: name}
	}
	return b[:min(len(b), limit)], nil
}

func (m memFiles) WriteFile(name, temp string, data []byte) *hostfuncs.Error {
	m[name] = bytes.Clone(data)
	return nil
}

// cryptoStore is a Store of app whose host answers mcp_resume_crypto
// only (the Go implementation, over files in memory).
func cryptoStore(app string) (*Store, memFiles) {
	files := memFiles{}
	call := func(fn string, req []byte) []byte {
		if fn != hostfuncs.FnCrypto {
			return []byte(`{"error":{"code":"io","message":"no such host function here"}}`)
		}
		return cryptohost.Serve(req, files)
	}
	return &Store{call: call, set: Settings{App: app}}, files
}

// openRecord opens record bytes b under k for tag as the store does: the
// header alone (checkHeader) with headerOnly, else read_open.
func openRecord(k *keys, app string, tag [16]byte, b []byte, headerOnly bool) (header, []byte, int) {
	if headerOnly {
		h, o := checkHeader(tag, b)
		return h, nil, o
	}
	s, files := cryptoStore(app)
	files[recordName(k.hash)] = b
	h, v, o, err := s.readRecord(k, tag, recordLimit, nil)
	if err != nil {
		return h, nil, recordCorrupt
	}
	return h, v, o
}

// The keys, tags and owner ids the store has the host compute are the
// reference derivations (so every record written before the host did the
// cryptography still opens), in one hkdf and one hmac call.
func TestHostCryptoMatchesTheReference(t *testing.T) {
	var raw [handleBytes]byte
	copy(raw[:], "0123456789abcdefghijklmn")
	calls := 0
	s, files := cryptoStore("my-app")
	inner := s.call
	s.call = func(fn string, req []byte) []byte { calls++; return inner(fn, req) }
	k, werr := s.deriveKeys(raw, true)
	if werr != nil || k != deriveKeys(raw, "my-app") || calls != 1 {
		t.Fatalf("deriveKeys: %v, %d calls; want the reference keys in one call", werr, calls)
	}
	tag, owner, werr := s.tags(&k, "alice", true)
	if werr != nil || tag != k.tag("alice") || owner != ownerOf("my-app", "alice") || calls != 2 {
		t.Fatalf("tags: %v, %d calls; want the reference tag and owner in one call", werr, calls)
	}
	// The owner key is derived once per store.
	if _, werr := s.deriveKeys(raw, true); werr != nil {
		t.Fatal(werr)
	}
	if _, o, _ := s.tags(&k, "bob", true); o != ownerOf("my-app", "bob") {
		t.Error("bob's owner id is not the reference")
	}
	// seal_write writes the reference record, byte for byte.
	h := header{Generation: 2, CreatedMS: 1, IdleTTLMS: 2, MaxAgeMS: 3, LastUsedMS: 4, Tag: tag}
	h.Nonce[3] = 9
	if err := s.writeRecord(&k, &h, []byte("value")); err != nil {
		t.Fatal(err)
	}
	if got, want := files[recordName(k.hash)], sealRecord(&k, "my-app", h, []byte("value")); !bytes.Equal(got, want) {
		t.Errorf("seal_write wrote %x, want %x", got, want)
	}
	// A host whose crypto fails: store_unavailable.
	s.call = func(string, []byte) []byte { return []byte(`{"error":{"code":"invalid_request","message":"no"}}`) }
	s.set.StateDir = "/nowhere"
	_, werr = s.deriveKeys(raw, false)
	wantCode(t, werr, hostfuncs.CodeStoreUnavailable)
}

// An mcp_resume_crypto answer that breaks the layout (a host's bug) is an
// io error, never taken as a record that does not open (which the store
// would remove) nor as a write that happened.
func TestMalformedCryptoAnswers(t *testing.T) {
	var raw [handleBytes]byte
	k := deriveKeys(raw, "app")
	s, _ := cryptoStore("app")
	for _, c := range []struct {
		op   string
		resp string
	}{{"read_open", "\x00short"}, {"read_open", "\x01" + strings.Repeat("h", headerLen+1)}, {"seal_write", "\x00unexpected"}} {
		s.call = func(string, []byte) []byte { return []byte(c.resp) }
		var err error
		if c.op == "read_open" {
			_, _, _, err = s.readRecord(&k, k.tag("a"), 1000, nil)
		} else {
			err = s.writeRecord(&k, &header{Generation: 1, IdleTTLMS: 1, MaxAgeMS: 1}, []byte("v"))
		}
		if code(err) != hostfuncs.CodeIO {
			t.Errorf("%s answered %q: error %v, want io", c.op, c.resp, err)
		}
	}
}
