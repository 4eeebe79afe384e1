package primitives

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// An fd entry whose link cannot be read fails the whole fds op: "cannot
// tell" must never read as "closed", or a host whose fds the server may not
// read (a non-dumpable subreaper) would look like one that holds nothing.
// A regular file stands in for the unreadable link (readlink answers
// EINVAL), since root reads every real one.
func TestFDs_UnreadableLinkIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("pipe:[1]", filepath.Join(dir, "0")); err != nil {
		t.Fatal(err)
	}
	if got := fds(dir, nil); got["error"] != nil {
		t.Fatalf("fds of readable links = %+v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := fds(dir, nil)
	werr, _ := got["error"].(*hostfuncs.Error)
	if werr == nil || werr.Code != hostfuncs.CodeIO {
		t.Errorf("fds with an unreadable link = %+v, want an io error", got)
	}
}
