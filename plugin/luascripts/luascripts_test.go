package luascripts

import (
	"crypto/sha1"
	"encoding/hex"
	"os"
	"testing"
)

func TestSplit(t *testing.T) {
	src := "-- a comment\n\n--- prelude\nlocal x = 1\n\n--- one\nreturn x\n\n--- two\nreturn x + 1\n"
	got := Split(src)
	if len(got) != 2 {
		t.Fatalf("Split: %d scripts, want 2: %v", len(got), got)
	}
	for name, want := range map[string]string{"one": "local x = 1\nreturn x\n", "two": "local x = 1\nreturn x + 1\n"} {
		if s := got[name]; s.Src != want || s.SHA1 != "" {
			t.Errorf("%s = %+v, want %q and no SHA-1 (sums.go does not know it)", name, s, want)
		}
	}
}

// TestSums: scripts.lua is the handle store's Lua file stripped, every
// script of it has its SHA-1 in sums.go, and sums.go has no other.
func TestSums(t *testing.T) {
	src, err := os.ReadFile("../../plugin/internal/handles/redis.lua")
	if err != nil {
		t.Fatal(err)
	}
	if Source != Strip(string(src)) {
		t.Fatal("scripts.lua is not redis.lua stripped: run go generate ./plugin/luascripts")
	}
	scripts := Split(Source)
	for name, s := range scripts {
		sum := sha1.Sum([]byte(s.Src))
		if want := hex.EncodeToString(sum[:]); s.SHA1 != want {
			t.Errorf("script %s: SHA-1 %q in sums.go, its text's is %s: run go generate ./plugin/luascripts", name, s.SHA1, want)
		}
	}
	if len(sums) != len(scripts) || len(scripts) < 8 {
		t.Errorf("sums.go has %d SHA-1s for %d scripts: run go generate ./plugin/luascripts", len(sums), len(scripts))
	}
}

// TestStrip keeps the code and the names of a file and drops its comments,
// blank lines and indentation; a script stripped splits into the same
// names.
func TestStrip(t *testing.T) {
	src := "-- header\n\n--- prelude\n  -- why\n  local x = 1 -- kept\n\n--- one\nreturn x\n"
	want := "\n--- prelude\nlocal x = 1 -- kept\n\n--- one\nreturn x\n"
	if got := Strip(src); got != want {
		t.Errorf("Strip = %q, want %q", got, want)
	}
	if got := Split(Strip(src)); got["one"].Src != "local x = 1 -- kept\nreturn x\n" {
		t.Errorf("Split(Strip) = %+v", got)
	}
}
