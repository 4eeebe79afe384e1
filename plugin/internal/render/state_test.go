package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// stateApp is one app of a state_list or state_gc input, as the CLIs build
// it from the handle_list and handle_gc outputs.
type stateApp struct {
	App      string                      `json:"app"`
	StateDir string                      `json:"state_dir"`
	List     *hostfuncs.HandleListOutput `json:"list,omitempty"`
	GC       *hostfuncs.HandleGCOutput   `json:"gc,omitempty"`
}

func renderState(t *testing.T, command string, asJSON bool, apps []stateApp) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"command": command, "json": asJSON, "apps": apps})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var stateApps = []stateApp{
	{App: "zeta", StateDir: "/r/zeta/handles",
		List: &hostfuncs.HandleListOutput{Handles: []hostfuncs.HandleEntry{
			{Key: "0123456789ab", State: hostfuncs.HandleLive, Generation: 3, Size: 120, AgeMS: 7_200_000, IdleMS: 61_000},
			{Key: "ba9876543210", State: hostfuncs.HandleExpiredIdle, AgeMS: 3 * 86_400_000, IdleMS: 86_400_000},
		}, Live: 1, Tombstones: 1, Shards: 64, Bytes: 120},
		GC: &hostfuncs.HandleGCOutput{ExpiredIdle: 2, TombstonesDropped: 1, Live: 7}},
	{App: "alpha", StateDir: "/r/alpha/handles",
		List: &hostfuncs.HandleListOutput{Handles: []hostfuncs.HandleEntry{
			{Key: "cafecafecafe", State: hostfuncs.HandleLive, Generation: 1, AgeMS: 500, IdleMS: 500},
			{Key: "feedfeedfeed", State: hostfuncs.HandleEvicted, AgeMS: 5000, IdleMS: 100},
		}, Live: 1, Tombstones: 1, Shards: 1},
		GC: &hostfuncs.HandleGCOutput{ExpiredMaxAge: 4, OrphansRemoved: 1, TempsRemoved: 2}},
}

func TestRenderStateList(t *testing.T) {
	got := renderState(t, "state_list", false, stateApps)
	want := string(tabwriterTable([][]string{
		{"APP", "KEY", "STATE", "GEN", "SIZE", "AGE", "IDLE"},
		{"alpha", "cafecafecafe", "live", "1", "0", "0s", "0s"},
		{"alpha", "feedfeedfeed", "evicted", "-", "-", "5s", "0s"},
		{"zeta", "0123456789ab", "live", "3", "120", "2h", "61s"},
		{"zeta", "ba9876543210", "expired_idle", "-", "-", "3d", "24h"},
	})) + "\nalpha: 1 live, 1 tombstones, 1 shards, 0 bytes in /r/alpha/handles\n" +
		"zeta: 1 live, 1 tombstones, 64 shards, 120 bytes in /r/zeta/handles\n"
	if string(got) != want {
		t.Errorf("state list text:\n%s\nwant\n%s", got, want)
	}
	type row struct {
		App      string `json:"app"`
		StateDir string `json:"state_dir"`
		hostfuncs.HandleListOutput
	}
	gotJSON := renderState(t, "state_list", true, stateApps)
	wantJSON := stdIndent(t, []row{{"alpha", "/r/alpha/handles", *stateApps[1].List}, {"zeta", "/r/zeta/handles", *stateApps[0].List}})
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("state list JSON:\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	empty := []stateApp{{App: "new", StateDir: "/r/new/handles", List: &hostfuncs.HandleListOutput{Handles: []hostfuncs.HandleEntry{}, Shards: 64}}}
	if got := string(renderState(t, "state_list", false, empty)); got != "new: 0 live, 0 tombstones, 64 shards, 0 bytes in /r/new/handles\n" {
		t.Errorf("a store without handles: %q", got)
	}
	if got := string(renderState(t, "state_list", false, nil)); got != "no handle stores\n" {
		t.Errorf("no stores: %q", got)
	}
	if got := string(renderState(t, "state_list", true, nil)); got != "[]\n" {
		t.Errorf("no stores JSON: %q", got)
	}
}

func TestRenderStateGC(t *testing.T) {
	got := renderState(t, "state_gc", false, stateApps)
	want := tabwriterTable([][]string{
		{"APP", "EXPIRED IDLE", "EXPIRED MAX AGE", "TOMBSTONES DROPPED", "ORPHANS REMOVED", "TEMPS REMOVED", "LIVE", "DIRECTORY"},
		{"alpha", "0", "4", "0", "1", "2", "0", "/r/alpha/handles"},
		{"zeta", "2", "0", "1", "0", "0", "7", "/r/zeta/handles"},
	})
	if !bytes.Equal(got, want) {
		t.Errorf("state gc text:\n%s\nwant\n%s", got, want)
	}
	type row struct {
		App      string `json:"app"`
		StateDir string `json:"state_dir"`
		hostfuncs.HandleGCOutput
	}
	gotJSON := renderState(t, "state_gc", true, stateApps)
	wantJSON := stdIndent(t, []row{{"alpha", "/r/alpha/handles", *stateApps[1].GC}, {"zeta", "/r/zeta/handles", *stateApps[0].GC}})
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("state gc JSON:\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	if got := string(renderState(t, "state_gc", false, nil)); got != "no handle stores\n" {
		t.Errorf("no stores: %q", got)
	}
	if !strings.Contains(Usage, "state list") || !strings.Contains(Usage, "state gc") {
		t.Error("the usage text does not name the state commands")
	}
}
