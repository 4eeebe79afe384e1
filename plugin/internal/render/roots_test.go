package render

import (
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// list, prune, state list and state gc fail, naming the root, when the
// root holds no app directory or the named app has none there; an app
// directory without files is a normal empty answer, and input without
// root_dirs is not checked.
func TestRenderRoots(t *testing.T) {
	const hint = "no server has kept state there; give the root your servers use with --state-dir ROOT or MCP_RESUME_STATE_DIR"
	cases := []struct {
		extra, want string // want: the error message, "" for an answer
	}{
		{``, ""},
		{`, "state_root": "/r", "root_dirs": []`, "no app directories under /r: " + hint},
		// Directories that are no app's (names the app rule refuses) are
		// not apps.
		{`, "state_root": "/r", "root_dirs": ["a+", "-x", "Up", "a+B"]`, "no app directories under /r: " + hint},
		{`, "state_root": "/r", "root_dirs": ["app-b"]`, ""},
		{`, "state_root": "/r", "root_dirs": ["app-b"], "app": ""`, ""},
		{`, "state_root": "/r", "root_dirs": ["app-b"], "app": "app-b"`, ""},
		{`, "state_root": "/r", "root_dirs": ["+my+app"], "app": "MyApp"`, ""},
		{`, "state_root": "/r", "root_dirs": ["zeta", "+my+app", "app-b", "x+"], "app": "nope"`, `no app "nope" under /r; the apps there: MyApp, app-b, zeta`},
		{`, "state_root": "/r", "root_dirs": ["myapp"], "app": "MyApp"`, `no app "MyApp" under /r; the apps there: myapp`},
		{`, "state_root": "/r", "root_dirs": [], "app": "nope"`, `no app "nope" under /r, which holds no app directories: ` + hint},
	}
	for _, cmd := range []string{"list", "prune", "state_list", "state_gc"} {
		for _, c := range cases {
			in := `{"command": "` + cmd + `", "apps": []` + c.extra + `}`
			out, err := Render([]byte(in))
			werr, _ := err.(*hostfuncs.Error)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Render(%s) failed: %v", in, err)
			case c.want == "" && len(out) == 0:
				t.Errorf("Render(%s) printed nothing", in)
			case c.want != "" && (werr == nil || werr.Code != hostfuncs.CodeNotFound || werr.Message != c.want):
				t.Errorf("Render(%s) = %q, %v; want not_found %q", in, out, err, c.want)
			}
		}
	}
	// whoami and usage have no root to check.
	if _, err := Render([]byte(`{"command": "usage", "state_root": "/r", "root_dirs": []}`)); err != nil {
		t.Errorf("usage with root_dirs: %v", err)
	}
}
