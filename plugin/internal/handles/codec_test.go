package handles

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The hand-written primitives (kept out of plugin.wasm's size) against the
// standard library's.

func TestHMACAndHKDFMatchTheStandardLibrary(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("k"), bytes.Repeat([]byte("x"), 64), bytes.Repeat([]byte("y"), 65), bytes.Repeat([]byte("z"), 200)} {
		for _, msg := range [][]byte{nil, []byte("hello"), bytes.Repeat([]byte("m"), 1000)} {
			m := hmac.New(sha256.New, key)
			m.Write(msg)
			if got := hmacSHA256(key, msg); !bytes.Equal(got[:], m.Sum(nil)) {
				t.Errorf("hmacSHA256(%d-byte key, %d-byte msg) differs from crypto/hmac", len(key), len(msg))
			}
		}
	}
	var raw [handleBytes]byte
	copy(raw[:], "0123456789abcdefghijklmn")
	k := deriveKeys(raw, "my-app")
	for purpose, got := range map[string][]byte{"key": k.hash[:], "seal": k.seal[:], "principal": k.principal[:]} {
		want, err := hkdf.Key(sha256.New, raw[:], []byte(hkdfSalt), purpose+"\x00my-app", 32)
		if err != nil || !bytes.Equal(got, want[:len(got)]) {
			t.Errorf("deriveKeys %s differs from crypto/hkdf", purpose)
		}
	}
	if k2 := deriveKeys(raw, "other-app"); k2.hash == k.hash || k2.seal == k.seal {
		t.Error("two apps derive the same keys from one handle")
	}
}

func TestInvalidHandleMessageSaysTheLength(t *testing.T) {
	if !strings.Contains(msgInvalidHandle, " "+strconv.Itoa(HandleLen)+" characters") {
		t.Errorf("%q does not give the handle length %d", msgInvalidHandle, HandleLen)
	}
}

func TestCRC32MatchesHashCRC32(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("a"), []byte("123456789"), bytes.Repeat([]byte{0xff, 0, 7}, 999)} {
		if got, want := crc32IEEE(b), crc32.ChecksumIEEE(b); got != want {
			t.Errorf("crc32IEEE(%d bytes) = %08x, want %08x", len(b), got, want)
		}
	}
}

func TestDurationSyntaxMatchesTime(t *testing.T) {
	for _, s := range []string{"90s", "24h", "1h30m", "1.5s", "500ms", "1m0.25s", "+2h", "0", "-1s", "1us", "1µs", "1μs", "300ns", ".5s", "1.s", "2562047h",
		"", "s", "1", "1x", "1.2.3s", "--1s", "soon", "9223372036854775808ns", "2562048h", "1e3s", "1 s", "0.0000000001s"} {
		want, werr := time.ParseDuration(s)
		got, ok := parseDuration(s)
		if ok != (werr == nil) || ok && got != want.Milliseconds() {
			t.Errorf("parseDuration(%q) = %d, %v; time.ParseDuration: %v, %v", s, got, ok, want.Milliseconds(), werr)
		}
	}
	for _, ms := range []int64{0, 1, 999, 1000, 1500, 60000, 90000, 3600000, 86400000, 2592000000, 5400001, -1500} {
		if got, want := durationText(ms), (time.Duration(ms) * time.Millisecond).String(); got != want {
			t.Errorf("durationText(%d) = %q, want %q", ms, got, want)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90s", "1h30m", "1.5s", ".5ms", "-0", "1µs", "9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, werr := time.ParseDuration(s)
		got, ok := parseDuration(s)
		if ok != (werr == nil) || ok && got != want.Milliseconds() {
			t.Errorf("parseDuration(%q) = %d, %v; time.ParseDuration: %v, %v", s, got, ok, want, werr)
		}
	})
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
	f.Add(encodeIndex(nil))
	f.Add(encodeIndex([]entry{e}))
	e2 := e
	e2.Hash[0], e2.State = 10, stateEvicted
	f.Add(encodeIndex([]entry{e, e2}))
	f.Add([]byte("MRI1\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, ok := decodeIndex(b)
		if !ok {
			return
		}
		// What decodes re-encodes to the same bytes.
		if again := encodeIndex(entries); !bytes.Equal(again, b) {
			t.Errorf("index %x decodes but re-encodes to %x", b, again)
		}
	})
}
