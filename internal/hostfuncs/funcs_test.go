package hostfuncs_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-resume/mcp-resume/internal/hostfuncs"
	"github.com/mcp-resume/mcp-resume/internal/wire"
)

func TestFuncs_RefusesNames(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "state")
	f := hostfuncs.New(hostfuncs.Config{Dir: dir})
	if e := f.PrepareDir(); e != nil {
		t.Fatal(e)
	}
	secret := filepath.Join(root, "secret")
	os.WriteFile(secret, []byte("x"), 0o600)
	for _, name := range []string{"", secret, "../secret", "..", ".", ".hidden", "a/b", "a\x00b", "sp ace", string(make([]byte, 256))} {
		for _, fn := range []string{wire.FnRead, wire.FnWrite, wire.FnRemove} {
			req, _ := json.Marshal(map[string]any{"name": name, "limit": 10, "data": []byte("tok")})
			var resp wire.Empty
			if err := json.Unmarshal(f.Call(fn, req), &resp); err != nil {
				t.Fatalf("%s(%q): response not JSON: %v", fn, name, err)
			}
			if resp.Error == nil || resp.Error.Code != wire.CodeInvalidRequest {
				t.Errorf("%s(%q) = %+v, want invalid_request", fn, name, resp.Error)
			}
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "x" {
		t.Error("a file outside the state directory changed")
	}
}

func TestFuncs_MalformedRequests(t *testing.T) {
	f := hostfuncs.New(hostfuncs.Config{Dir: t.TempDir()})
	for _, fn := range append(wire.Functions, "no_such_function") {
		var resp wire.Empty
		out := f.Call(fn, []byte("{not json"))
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("%s: response %q not JSON", fn, out)
		}
		switch fn {
		case wire.FnIdentity, wire.FnPrepareDir:
			// These take no request fields and ignore the body.
		default:
			if resp.Error == nil || resp.Error.Code != wire.CodeInvalidRequest {
				t.Errorf("%s(garbage) = %s, want invalid_request", fn, out)
			}
		}
	}
}

// Required fields are required: a request without them is refused rather
// than guessed at (an empty token file, a list of everything, an empty log line).
func TestFuncs_MissingFields(t *testing.T) {
	f := hostfuncs.New(hostfuncs.Config{Dir: t.TempDir()})
	for fn, req := range map[string]string{
		wire.FnWrite:  `{"name":"token-5-1.a"}`,
		wire.FnList:   `{}`,
		wire.FnLog:    `{"event":"x"}`,
		wire.FnRead:   `{"name":"token-5-1.a"}`, // limit 0 is outside 1..1048576
		wire.FnRemove: `{}`,
	} {
		var resp wire.Empty
		if err := json.Unmarshal(f.Call(fn, []byte(req)), &resp); err != nil || resp.Error == nil || resp.Error.Code != wire.CodeInvalidRequest {
			t.Errorf("%s(%s) = %+v, %v; want invalid_request", fn, req, resp.Error, err)
		}
	}
}
