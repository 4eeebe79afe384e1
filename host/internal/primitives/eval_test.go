package primitives_test

import (
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
	"github.com/mcp-resume/mcp-resume/hostfuncs/redishost"
)

// mcp_resume_eval through Call (hostfuncs/README.md, "mcp_resume_eval"):
// the JSON response of a reply and of an error, required members, and a
// store's clients shared by the Funcs of its instances. The conversions and
// codes themselves are hostfuncs/redishost's tests and the host_eval_*
// conformance cases.
func TestFuncs_Eval(t *testing.T) {
	s := redistest.Start(t)
	shared := &redishost.Clients{}
	defer shared.Close()
	a := primitives.New(primitives.Config{Redis: shared})
	b := primitives.New(primitives.Config{Redis: shared})
	own := primitives.New(primitives.Config{})

	req := `{"url":"` + s.URL + `","script":"return {1,'x',false}","keys":[],"args":[],"timeout_ms":2000}`
	for _, f := range []*primitives.Funcs{a, b, own} {
		if got := strings.TrimSpace(string(f.Call(hostfuncs.FnEval, []byte(req)))); got != `{"reply":[1,"x",null]}` {
			t.Fatalf("reply: %s", got)
		}
	}
	// Closing a Funcs that shares the store's clients leaves them open; its
	// own are closed with it.
	a.Close()
	if got := strings.TrimSpace(string(b.Call(hostfuncs.FnEval, []byte(req)))); got != `{"reply":[1,"x",null]}` {
		t.Fatalf("after closing a sibling: %s", got)
	}
	own.Close()
	if r := call[hostfuncs.Empty](t, own, hostfuncs.FnEval, []byte(req)); r.Error == nil || r.Error.Code != hostfuncs.CodeUnavailable {
		t.Fatalf("after Close: %+v", r.Error)
	}

	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnEval, []byte(`{"url":"`+s.URL+`","sha1":"`+strings.Repeat("0", 40)+`","keys":[],"args":[],"timeout_ms":2000}`)); r.Error == nil || r.Error.Code != hostfuncs.CodeNoScript {
		t.Fatalf("noscript: %+v", r.Error)
	}
	for _, bad := range []string{
		`{"script":"return 1","keys":[],"args":[],"timeout_ms":2000}`,
		`{"url":"` + s.URL + `","script":"return 1","args":[],"timeout_ms":2000}`,
		`{"url":"` + s.URL + `","script":"return 1","keys":[],"timeout_ms":2000}`,
		`{"url":"` + s.URL + `","script":"return 1","keys":[],"args":[]}`,
		`{"url":"` + s.URL + `","script":"return 1","keys":[1],"args":[],"timeout_ms":2000}`,
		`{"url":"` + s.URL + `","script":"return 1","keys":[],"args":[],"timeout_ms":1.5}`,
		`{"url":"` + s.URL + `","script":"return 1","keys":[],"args":[],"timeout_ms":2000,"cluster":"yes"}`,
	} {
		if r := call[hostfuncs.Empty](t, b, hostfuncs.FnEval, []byte(bad)); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("%s: %+v, want invalid_request", bad, r.Error)
		}
	}
}
