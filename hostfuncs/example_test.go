package hostfuncs_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// One mcp_resume_read call, both halves: the plugin encodes the request with
// its reflection-free codec, a Go host decodes it with encoding/json,
// checks the name rule and answers, and the plugin decodes the answer.
func Example() {
	// Plugin side: the request, as the guest writes it into Extism memory.
	req, _ := hostfuncs.ReadRequest{Name: "token-4242-98765", Limit: 4096}.EncodeJSON()
	fmt.Printf("request:  %s\n", req)

	// Host side: decode, refuse a name that breaks the rule, answer.
	var r hostfuncs.ReadRequest
	var resp hostfuncs.ReadResponse
	if err := json.Unmarshal(req, &r); err != nil || !hostfuncs.ValidName(r.Name) {
		resp.Error = &hostfuncs.Error{Code: hostfuncs.CodeInvalidRequest, Message: "bad request"}
	} else {
		resp.Data = []byte("session-token-1")[:min(r.Limit, 15)]
	}
	out, _ := json.Marshal(resp)
	out = hostfuncs.Pad8(out) // optional: fewer go-pdk calls to copy it
	fmt.Printf("response: %q, %d bytes\n", out, len(out))

	// Plugin side again.
	var got hostfuncs.ReadResponse
	if err := got.DecodeJSON(out); err != nil {
		fmt.Println("undecodable:", err)
	}
	fmt.Printf("token:    %s, error %v\n", got.Data, got.Error)
	// Output:
	// request:  {"name":"token-4242-98765","limit":4096}
	// response: "{\"data\":\"c2Vzc2lvbi10b2tlbi0x\"} ", 32 bytes
	// token:    session-token-1, error <nil>
}

// The name rule every host applies to every file name it is given before
// any system call: one path element, so no request reaches outside the
// state directory.
func ExampleValidName() {
	for _, name := range []string{"token-4242-98765", "../etc/passwd", "a/b", "..", ""} {
		fmt.Printf("%-18q %v\n", name, hostfuncs.ValidName(name))
	}
	// Output:
	// "token-4242-98765" true
	// "../etc/passwd"    false
	// "a/b"              false
	// ".."               false
	// ""                 false
}
