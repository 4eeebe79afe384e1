package host_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
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
	err = s.Store(ctx, "two words")
	if !errors.Is(err, host.ErrInvalidToken) || strings.Count(err.Error(), "invalid token") != 1 || !strings.HasPrefix(err.Error(), "invalid token: ") {
		t.Errorf("Store(two words) = %v; want one \"invalid token\", matching ErrInvalidToken", err)
	}
}
