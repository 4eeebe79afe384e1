package handles

import (
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance"
	"github.com/mcp-resume/mcp-resume/plugin/internal/testhost"
)

// quotaStore opens a store of app over a native test host with opts, on
// Redis when url is given, else on files.
func quotaStore(t *testing.T, app, url string, opts map[string]any) *Store {
	t.Helper()
	h := testhost.New(t)
	in := map[string]any{"app": app}
	if url != "" {
		useRedis(t, h)
		in["state_url"] = url
	}
	for k, v := range opts {
		in[k] = v
	}
	return openOn(t, h, in).s
}

// The attack: principal A creates far past its quota, and far past the
// store's cap; principal B's idle handles, made before and never used
// again, all survive, on both backends. With the default quota (a
// quarter) A evicts only its own at its quota; with a quota as large as
// the cap, A fills the store and the cap evicts the principal holding the
// most, A again.
func TestFloodingPrincipalEvictsOnlyItself(t *testing.T) {
	const cap = 512 // 4 shards of 128
	backends := map[string]string{"file": ""}
	if testing.Short() {
		t.Skip("creates thousands of handles")
	}
	rd := conformance.Redis(t)
	backends["redis"] = rd.URL
	for name, url := range backends {
		for _, quota := range []int64{0, cap} {
			t.Run(name+"/quota="+strconv.FormatInt(quota, 10), func(t *testing.T) {
				opts := map[string]any{"max_handles": cap}
				if quota > 0 {
					opts["max_handles_per_principal"] = quota
				}
				s := quotaStore(t, "flood-"+name+strconv.FormatInt(quota, 10), url, opts)
				now := int64(1767225600000)
				value := base64.StdEncoding.EncodeToString([]byte("v"))
				var victims []string
				for i := 0; i < 40; i++ {
					now++
					o, werr := call(t, s, "handle_create", map[string]any{"principal": "B", "value": value, "now_ms": now})
					if werr != nil {
						t.Fatal(werr)
					}
					victims = append(victims, o["handle"].(string))
				}
				var mine []string
				for i := 0; i < 4*cap; i++ {
					now++
					o, werr := call(t, s, "handle_create", map[string]any{"principal": "A", "value": value, "now_ms": now})
					if werr != nil {
						t.Fatalf("A's create %d: %v", i, werr)
					}
					mine = append(mine, o["handle"].(string))
				}
				for i, h := range victims {
					if _, werr := call(t, s, "handle_get", map[string]any{"handle": h, "principal": "B", "now_ms": now}); werr != nil {
						t.Fatalf("B's handle %d after A's flood: %v", i, werr)
					}
				}
				// A's handle of a few hundred creates ago went, and says so
				// (evicted, not not found: its tombstone is among the newest
				// of its shard, which keeps up to its cap of them); its last
				// is live.
				back := 300
				if quota > 0 {
					back = 700
				}
				_, werr := call(t, s, "handle_get", map[string]any{"handle": mine[len(mine)-back], "principal": "A", "now_ms": now})
				wantCode(t, werr, hostfuncs.CodeHandleEvicted)
				if _, werr := call(t, s, "handle_get", map[string]any{"handle": mine[len(mine)-1], "principal": "A", "now_ms": now}); werr != nil {
					t.Fatal(werr)
				}
				o, werr := call(t, s, "handle_list", map[string]any{"now_ms": now})
				if werr != nil {
					t.Fatal(werr)
				}
				live := int64(o["live"].(float64))
				if limit := int64(cap); quota == 0 {
					// The default quota: a quarter, spread over 4 shards
					// (32 each), plus B's 40.
					if live > 128+40 {
						t.Errorf("live %d, want at most A's quota 128 and B's 40", live)
					}
				} else if live > limit {
					t.Errorf("live %d, want at most the cap %d", live, limit)
				}
			})
		}
	}
}

// The quota option: 0 and absent give a quarter of max_handles (rounded up,
// at least 1), a value is kept, and one above max_handles or negative is
// invalid_option worded in the caller's language.
func TestMaxHandlesPerPrincipalOption(t *testing.T) {
	for _, c := range []struct {
		opts map[string]any
		want int64
	}{
		{map[string]any{}, 2500},
		{map[string]any{"max_handles_per_principal": 0}, 2500},
		{map[string]any{"max_handles": 3}, 1},
		{map[string]any{"max_handles": 1}, 1},
		{map[string]any{"max_handles": 100, "max_handles_per_principal": 100}, 100},
	} {
		s := quotaStore(t, "opt", "", c.opts)
		if got := s.Settings().MaxHandlesPerPrincipal; got != c.want {
			t.Errorf("%v: quota %d, want %d", c.opts, got, c.want)
		}
	}
	h := testhost.New(t)
	for _, c := range []struct{ caller, name string }{{"go", "MaxHandlesPerPrincipal"}, {"python", "max_handles_per_principal"}, {"typescript", "maxHandlesPerPrincipal"}} {
		for _, v := range []int64{101, -1} {
			b, _ := json.Marshal(map[string]any{"app": "opt", "state_root": filepath.Join(h.Facts.Home, "state"), "caller": c.caller, "max_handles": 100, "max_handles_per_principal": v})
			_, werr := New(h.Call).Open(b)
			wantCode(t, werr, hostfuncs.CodeInvalidOption)
			if !strings.Contains(werr.Message, c.name) {
				t.Errorf("%s: %q does not name %s", c.caller, werr.Message, c.name)
			}
		}
	}
}

// Tombstones are kept up to the shard's cap; when there are more, the
// flooder's go first: B's handle evicted by B's own quota still answers
// handle_evicted (not handle_not_found) after A's flood of evictions.
func TestFloodKeepsAnothersTombstones(t *testing.T) {
	rd := conformance.Redis(t)
	for name, url := range map[string]string{"file": "", "redis": rd.URL} {
		t.Run(name, func(t *testing.T) {
			s := quotaStore(t, "tombs-"+name, url, map[string]any{"max_handles": 4, "max_handles_per_principal": 2})
			now := int64(1767225600000)
			value := base64.StdEncoding.EncodeToString([]byte("v"))
			create := func(p string) string {
				t.Helper()
				now++
				o, werr := call(t, s, "handle_create", map[string]any{"principal": p, "value": value, "now_ms": now})
				if werr != nil {
					t.Fatal(werr)
				}
				return o["handle"].(string)
			}
			b1 := create("B")
			create("B")
			create("B") // evicts b1: B's quota is 2
			for i := 0; i < 50; i++ {
				create("A")
			}
			_, werr := call(t, s, "handle_get", map[string]any{"handle": b1, "principal": "B", "now_ms": now})
			wantCode(t, werr, hostfuncs.CodeHandleEvicted)
			o, werr := call(t, s, "handle_list", map[string]any{"now_ms": now})
			if werr != nil {
				t.Fatal(werr)
			}
			if n := o["tombstones"].(float64); n > 4 {
				t.Errorf("tombstones %v, want at most the cap 4", n)
			}
		})
	}
}
