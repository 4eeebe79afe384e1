package hostfuncs

import (
	"strings"
	"testing"
)

// The host rule for names is one path element of 1–255 bytes: anything a
// plugin may use as a file name in the state directory and nothing that
// leaves it (hostfuncs/README.md, "Names").
func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"token-1-2": true, ".token-1-2.0123456789abcdef.tmp": true, "x": true, "é": true, "a b": true, "\xff": true,
		"...": true, strings.Repeat("a", 255): true,
		"": false, ".": false, "..": false, "a/b": false, "/": false, "a\x00b": false, strings.Repeat("a", 256): false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}
