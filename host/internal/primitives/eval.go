package primitives

import (
	"context"
	"encoding/json"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// evalRequest is mcp_resume_eval's request as it arrives; pointers tell a
// missing member (hostfuncs/README.md, "mcp_resume_eval": url, keys, args
// and timeout_ms are required, so their absence is invalid_request).
type evalRequest struct {
	URL       *string   `json:"url"`
	Cluster   bool      `json:"cluster"`
	SHA1      string    `json:"sha1"`
	Script    string    `json:"script"`
	Keys      *[]string `json:"keys"`
	Args      *[]string `json:"args"`
	TimeoutMS *int      `json:"timeout_ms"`
}

// eval answers mcp_resume_eval through the store's Redis clients
// (hostfuncs/redishost: validation before any I/O, timeout_ms bounding the
// whole call, no resend, reply and error conversion). Its response is the
// reply or the error; a request missing a required member is
// invalid_request.
func (f *Funcs) eval(r evalRequest) (any, *hostfuncs.Error) {
	if r.URL == nil || r.Keys == nil || r.Args == nil || r.TimeoutMS == nil {
		return nil, invalid(`mcp_resume_eval: request lacks "url", "keys", "args" or "timeout_ms"`)
	}
	resp := f.redis.Eval(context.Background(), hostfuncs.EvalRequest{
		URL: *r.URL, Cluster: r.Cluster, SHA1: r.SHA1, Script: r.Script,
		Keys: *r.Keys, Args: *r.Args, TimeoutMS: *r.TimeoutMS,
	})
	if resp.Error != nil {
		return nil, resp.Error
	}
	return resp, nil
}

// evalBinary answers mcp_resume_eval's binary form (hostfuncs/README.md,
// "mcp_resume_eval", The binary form): the request decoded by
// hostfuncs.DecodeEvalBinary, then run exactly as the JSON form; the
// response is 0x00 and the binary reply, or the JSON error object
// (invalid_request for a request that breaks the layout).
func (f *Funcs) evalBinary(req []byte) []byte {
	q, werr := hostfuncs.DecodeEvalBinary(req)
	if werr == nil {
		resp := f.redis.Eval(context.Background(), q)
		if resp.Error == nil {
			return hostfuncs.EncodeEvalReply(resp.Reply)
		}
		werr = resp.Error
	}
	b, _ := json.Marshal(hostfuncs.Empty{Error: werr})
	return b
}
