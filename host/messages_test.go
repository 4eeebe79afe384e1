package host_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/mcp-resume/mcp-resume/host"
)

// Refusals say each thing once: the plugin's message as it is, still
// matching the sentinel.
func TestRefusals_SaidOnce(t *testing.T) {
	ctx := context.Background()
	_, err := host.Open(ctx, "a/b", &host.Options{CacheDir: sharedCacheDir})
	if want := `invalid app name "a/b": use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`; !errors.Is(err, host.ErrInvalidApp) || err.Error() != want {
		t.Errorf("Open(a/b) = %v; want %q matching ErrInvalidApp", err, want)
	}
	s := open(t, filepath.Join(t.TempDir(), "state", "test-app"), nil)
	// The plugin's message names the problem once; this package adds no
	// prefix of its own (no "invalid token: invalid token: ...").
	err = s.Store(ctx, "two words")
	if want := "invalid token: token has byte 0x20 at offset 3; only visible ASCII (0x21-0x7E) is allowed; pass the token exactly as the broker issued it"; !errors.Is(err, host.ErrInvalidToken) || err.Error() != want {
		t.Errorf("Store(two words) = %v; want %q matching ErrInvalidToken", err, want)
	}
}
