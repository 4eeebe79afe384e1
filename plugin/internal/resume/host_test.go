package resume_test

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
	"github.com/mcp-resume/mcp-resume/plugin/internal/testhost"
)

// testHost is the plugin's native test host (plugin/internal/testhost)
// with the resume store's open.
type testHost struct{ *testhost.Host }

// The default system of the conformance cases (testhost.New) and the
// names its identity gives: plain with no instance (MCP_RESUME_INSTANCE=-),
// else with the suffix of the default key of its launch.
const (
	serverStat     = testhost.ServerStat
	hostStart      = "98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836.2049x1234567"
	plainTokenFile = "token-4242-" + hostStart
	plainLockFile  = "lock-4242-" + hostStart
)

var (
	defaultSuffix = launchSuffix(resume.Launch{Args: []string{"server"}, Env: []string{"HOME=/home/u", "PATH=/usr/bin:/bin"}})
	tokenFile     = plainTokenFile + "-" + defaultSuffix
	lockFile      = plainLockFile + "-" + defaultSuffix
	markerFile    = resume.MarkerPrefix + defaultSuffix
)

// defaultNS are the default system's namespaces in key order.
func defaultNS() []string {
	var out []string
	for _, n := range resume.KeyNamespaces {
		out = append(out, testhost.Namespaces[n])
	}
	return out
}

// launchSuffix is the instance suffix of a server launched as l in the
// default system's namespaces.
func launchSuffix(l resume.Launch) string {
	return suffixOf(resume.KeyMaterial(defaultNS(), resume.DefaultInstanceKey(l)))
}

// suffixOf is the instance suffix the plugin must give key material m:
// the first 16 hex digits of its SHA-256, computed here natively (the
// plugin asks the host: mcp_resume_crypto sha256).
func suffixOf(m string) string {
	sum := sha256.Sum256([]byte(m))
	return hex.EncodeToString(sum[:8])
}

// lockSocketOf is the abstract socket the plugin must name for lock file
// lock in dir: "mcp-resume-lock-" and the first 40 hex digits of
// SHA-256(dir + "/" + lock), computed here natively.
func lockSocketOf(dir, lock string) string {
	sum := sha256.Sum256([]byte(dir + "/" + lock))
	return "mcp-resume-lock-" + hex.EncodeToString(sum[:20])
}

// keySuffix is the instance suffix of a declared key in the default
// system's namespaces.
func keySuffix(key string) string {
	return suffixOf(resume.KeyMaterial(defaultNS(), key))
}

var (
	data = testhost.Data
	link = testhost.Link
	fail = testhost.Fail
)

// newHost returns a host with the default system and the state directory
// path (not created) of app "conformance" under the state root
// <tmp>/state (openInput passes that root).
func newHost(t *testing.T) (*testHost, string) {
	h := testhost.New(t)
	return &testHost{h}, filepath.Join(h.Facts.Home, "state", "conformance")
}

// sibling returns another host (another server process) on the same
// system, sharing the fixtures.
func (h *testHost) sibling() *testHost { return &testHost{h.Sibling()} }

// open returns a store over h, opened with input.
func (h *testHost) open(input string) *resume.Store {
	h.T.Helper()
	s := resume.New(h.Call)
	out, werr := s.Open([]byte(input))
	if werr != nil {
		h.T.Fatalf("Open(%s): %v", input, werr)
	}
	// A host takes open's state_dir as the store's state directory.
	h.Dir = out.StateDir
	return s
}

func (h *testHost) events() []string { return h.Events() }
func (h *testHost) release()         { h.Release() }
