package handles

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// deriveKeys is HKDF-SHA256 with one info string per purpose: two apps
// never share a key.
func TestDeriveKeysPerApp(t *testing.T) {
	var raw [handleBytes]byte
	copy(raw[:], "0123456789abcdefghijklmn")
	k := deriveKeys(raw, "my-app")
	want, err := hkdf.Key(sha256.New, raw[:], []byte(hkdfSalt), "seal\x00my-app", 32)
	if err != nil || !bytes.Equal(k.seal[:], want) {
		t.Error("the seal key is not HKDF-SHA256(handle, salt, \"seal\\x00<app>\")")
	}
	if k2 := deriveKeys(raw, "other-app"); k2.hash == k.hash || k2.seal == k.seal || k2.principal == k.principal {
		t.Error("two apps derive the same keys from one handle")
	}
}

func TestInvalidHandleMessageSaysTheLength(t *testing.T) {
	if msg := invalidHandle(resume.Names{}).Message; !strings.Contains(msg, " "+strconv.Itoa(HandleLen)+" characters") {
		t.Errorf("%q does not give the handle length %d", msg, HandleLen)
	}
}

func FuzzParseHandle(f *testing.F) {
	var raw [handleBytes]byte
	f.Add(formatHandle(raw))
	copy(raw[:], "abcdefghijklmnopqrstuvwx")
	f.Add(formatHandle(raw))
	f.Add("mrh1_")
	f.Add("mrh1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	f.Add(strings.Repeat("é", 20))
	f.Fuzz(func(t *testing.T, s string) {
		raw, ok := ParseHandle(s)
		if !ok {
			return
		}
		// A handle that parses is exactly the one its bytes format to.
		if formatHandle(raw) != s || len(s) != HandleLen {
			t.Errorf("ParseHandle(%q) accepted a handle that does not round-trip", s)
		}
	})
}

// sealedFixture is the record of "value" at generation 3 for principal
// alice of app "app", under the handle of 24 zero bytes: its keys, tag and
// bytes.
func sealedFixture() (keys, [16]byte, []byte) {
	var raw [handleBytes]byte
	k := deriveKeys(raw, "app")
	tag := k.tag("alice")
	return k, tag, sealRecord(&k, "app", header{Generation: 3, CreatedMS: 1, IdleTTLMS: 2, MaxAgeMS: 3, Tag: tag}, []byte("value"))
}

// FuzzRecord feeds arbitrary bytes to the record decoder: it never
// panics, and only a record sealed under the keys opens.
func FuzzRecord(f *testing.F) {
	k, tag, good := sealedFixture()
	f.Add(good)
	f.Add(good[:headerLen])
	f.Add(good[:len(good)-1])
	f.Add([]byte("MRH1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, headerOnly := range []bool{false, true} {
			h, v, outcome := openRecord(&k, "app", tag, b, headerOnly)
			if outcome == recordOK && !headerOnly && (!bytes.Equal(b, good) || string(v) != "value" || h.Generation != 3) {
				t.Errorf("a forged record opened: %x", b)
			}
		}
	})
}

func TestRecordBindsItsHeader(t *testing.T) {
	k, tag, good := sealedFixture()
	if _, v, o := openRecord(&k, "app", tag, good, false); o != recordOK || string(v) != "value" {
		t.Fatalf("sealed record does not open: %d", o)
	}
	for i := 5; i < headerLen; i++ {
		b := bytes.Clone(good)
		b[i] ^= 1
		if _, _, o := openRecord(&k, "app", tag, b, false); o == recordOK {
			t.Errorf("a record with header byte %d changed opens", i)
		}
	}
	if _, _, o := openRecord(&k, "other", tag, good, false); o != recordCorrupt {
		t.Error("a record of another app opens")
	}
	var raw2 [handleBytes]byte
	raw2[0] = 1
	k2 := deriveKeys(raw2, "app")
	if _, _, o := openRecord(&k2, "app", tag, good, false); o != recordCorrupt {
		t.Error("a record moved to another handle opens")
	}
	if _, _, o := openRecord(&k, "app", k.tag("bob"), good, false); o != recordForeign {
		t.Error("another principal's tag is not foreign")
	}
}

func FuzzIndex(f *testing.F) {
	e := entry{Generation: 2, Size: 5, CreatedMS: 1, LastUsedMS: 2, IdleTTLMS: 3, MaxAgeMS: 4}
	e.Hash[0] = 9
	f.Add(encodeEntries(nil))
	f.Add(encodeEntries([]entry{e}))
	e2 := e
	e2.Hash[0], e2.State = 10, stateEvicted
	f.Add(encodeEntries([]entry{e, e2}))
	f.Add([]byte("\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, ok := decodeEntries(b)
		if !ok {
			return
		}
		// What decodes re-encodes to the same bytes.
		if again := encodeEntries(entries); !bytes.Equal(again, b) {
			t.Errorf("index %x decodes but re-encodes to %x", b, again)
		}
	})
}

func TestShortenKeys(t *testing.T) {
	full := "h-0123456789abcdef0123456789abcdef"
	for in, want := range map[string]string{
		"open " + full + ": permission denied":              "open h-0123456789ab…: permission denied",
		"rename ." + full + ".00ff00ff00ff00ff.tmp " + full: "rename .h-0123456789ab….00ff00ff00ff00ff.tmp h-0123456789ab…",
		"h-0123 is short, i-00 is an index":                 "h-0123 is short, i-00 is an index",
	} {
		if got := shortenKeys(in); got != want {
			t.Errorf("shortenKeys(%q) = %q, want %q", in, got, want)
		}
	}
}

// A value sealed for Redis carries its generation in clear and in the
// associated data: it opens as that generation, a changed generation
// fails to open, another app's or principal's data fails; the same bytes
// in format 2 (base64 after "v2.") open alike, and a value of the first
// format (base64 of nonce and ciphertext) opens as generation 0.
func TestRedisSealBindsTheGeneration(t *testing.T) {
	var raw [handleBytes]byte
	copy(raw[:], "0123456789abcdefghijklmn")
	r := &request{k: deriveKeys(raw, "app")}
	r.hash, r.tag = r.k.hash, r.k.tag("alice")
	s, _ := cryptoStore("app")
	other, _ := cryptoStore("other")
	sealed, werr := s.redisSeal(r, []byte("value"), 7)
	if werr != nil || !strings.HasPrefix(sealed, redisSealed3) || len(sealed) != 1+8+12+len("value")+gcmTagLen {
		t.Fatalf("redisSeal = %q, %v; want format 3", sealed, werr)
	}
	if v, gen, ok, _ := s.redisOpen(r, sealed); !ok || gen != 7 || string(v) != "value" {
		t.Fatalf("redisOpen = %q, %d, %v; want value at 7", v, gen, ok)
	}
	body := []byte(strings.TrimPrefix(sealed, redisSealed3))
	v2 := redisSealed2 + base64.StdEncoding.EncodeToString(body)
	if v, gen, ok, _ := s.redisOpen(r, v2); !ok || gen != 7 || string(v) != "value" {
		t.Fatalf("format 2: %q, %d, %v; want value at 7", v, gen, ok)
	}
	changed := append([]byte(nil), body...)
	changed[7] = 6 // the generation in clear, 7 -> 6
	for _, moved := range []string{redisSealed3 + string(changed), redisSealed2 + base64.StdEncoding.EncodeToString(changed)} {
		if _, _, ok, _ := s.redisOpen(r, moved); ok {
			t.Errorf("a value whose generation was changed opened: %q", moved[:4])
		}
	}
	if _, _, ok, _ := other.redisOpen(r, sealed); ok {
		t.Error("a value opened for another app")
	}
	bob := *r
	bob.tag = r.k.tag("bob")
	if _, _, ok, _ := s.redisOpen(&bob, sealed); ok {
		t.Error("a value opened for another principal")
	}
	for _, bad := range []string{"", redisSealed3, redisSealed2, redisSealed2 + "AAAA", redisSealed3 + "AAAAAAAA", "not base64!", sealed[:len(sealed)-4], v2[:len(v2)-4]} {
		if _, _, ok, _ := s.redisOpen(r, bad); ok {
			t.Errorf("redisOpen(%q) opened", bad)
		}
	}
	nonce := make([]byte, 12)
	first := gcm(r.k.seal).Seal(nonce, nonce, []byte("old"), redisAAD("app", r.hash, r.tag, 0))
	if v, gen, ok, _ := s.redisOpen(r, base64.StdEncoding.EncodeToString(first)); !ok || gen != 0 || string(v) != "old" {
		t.Errorf("first format: %q, %d, %v; want old at 0", v, gen, ok)
	}
}
