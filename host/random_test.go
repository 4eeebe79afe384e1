package host_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// The guest's random source is real (hostfuncs/README.md, "Loading the
// plugin", WASI): the plugin names each temporary file from WASI random_get,
// and wazero's default random source is a fixed sequence, so two servers
// loaded without the loader's real source would draw the same temporary
// names. Two stores, each a fresh plugin instance loaded as Open loads it,
// store twice; every temp of their mcp_resume_write requests is
// ".<name>.<16 lowercase hex>.tmp" and no two are equal.
func TestStore_TempNamesFromRealRandom(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "state")
	var temps []string
	for _, app := range []string{"rand-a", "rand-b"} {
		var mu sync.Mutex
		var writes []hostfuncs.WriteRequest
		funcs := primitives.New(primitives.Config{Trace: func(fn string, req []byte, _ time.Duration) {
			if fn != hostfuncs.FnWrite {
				return
			}
			var w hostfuncs.WriteRequest
			if err := json.Unmarshal(req, &w); err != nil {
				t.Errorf("%s request %q: %v", fn, req, err)
			}
			mu.Lock()
			writes = append(writes, w)
			mu.Unlock()
		}})
		s, err := host.OpenWithFuncsForTest(ctx, app, &host.Options{StateRoot: root, CacheDir: sharedCacheDir,
			Logger: slog.New(slog.DiscardHandler), Instance: host.NoInstance}, funcs)
		if err != nil {
			t.Fatal(err)
		}
		whoami(t, s)
		for _, tok := range []string{"tok-1", "tok-2"} {
			if err := s.Store(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
		s.Close(ctx)
		if len(writes) != 2 {
			t.Fatalf("%s: %d mcp_resume_write requests for two stores, want 2: %+v", app, len(writes), writes)
		}
		for _, w := range writes {
			if !regexp.MustCompile(`^\.` + regexp.QuoteMeta(w.Name) + `\.[0-9a-f]{16}\.tmp$`).MatchString(w.Temp) {
				t.Fatalf("%s: temp %q for name %q is not .<name>.<16 lowercase hex>.tmp", app, w.Temp, w.Name)
			}
			temps = append(temps, w.Temp[len(w.Name)+2:len(w.Temp)-4]) // the 16 hex digits
		}
	}
	seen := map[string]bool{}
	for _, r := range temps {
		if seen[r] {
			t.Errorf("random digits %q drawn twice in %q: the guest's random source is not real", r, temps)
		}
		seen[r] = true
	}
}
