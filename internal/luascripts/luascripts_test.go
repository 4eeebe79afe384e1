package luascripts

import (
	"crypto/sha1"
	"encoding/hex"
	"testing"
)

func TestSplit(t *testing.T) {
	src := "-- a comment\n\n--- prelude\nlocal x = 1\n\n--- one\nreturn x\n\n--- two\nreturn x + 1\n"
	got := Split(src)
	if len(got) != 2 {
		t.Fatalf("Split: %d scripts, want 2: %v", len(got), got)
	}
	for name, want := range map[string]string{"one": "local x = 1\nreturn x\n", "two": "local x = 1\nreturn x + 1\n"} {
		sum := sha1.Sum([]byte(want))
		if s := got[name]; s.Src != want || s.SHA1 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s = %+v, want %q with its SHA-1", name, s, want)
		}
	}
}
