package hostfuncs

import (
	"bytes"
	"reflect"
	"testing"
)

// TestEvalBinaryRoundTrip: a request with raw bytes in keys and args, and
// a reply of every kind with bytes that are not UTF-8, come back as they
// went, byte for byte.
func TestEvalBinaryRoundTrip(t *testing.T) {
	for _, r := range []EvalRequest{
		{URL: "redis://127.0.0.1:6379/0", Cluster: true, SHA1: "2cb23e1072292be87f9fdf82f38411dd8e208e5f", Keys: []string{"k\xff", ""}, Args: []string{"\x00\x80", "a"}, TimeoutMS: 2000},
		{URL: "rediss://u:p@h:1/2", Script: "return 1", Keys: []string{}, Args: []string{}, TimeoutMS: 60000},
	} {
		got, werr := DecodeEvalBinary(r.EncodeBinary())
		if werr != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("round trip of %+v: %+v, %v", r, got, werr)
		}
	}
	reply := Reply{Kind: ReplyArray, Array: []Reply{
		{Kind: ReplyInt, Int: -3}, {Kind: ReplyString, Str: "b\xff\x00c"}, {Kind: ReplyNull},
		{Kind: ReplyArray, Array: []Reply{{Kind: ReplyError, Str: "ERR inner"}}}, {Kind: ReplyString, Str: ""},
	}}
	got, herr, ok := ParseEvalBinaryResponse(EncodeEvalReply(reply))
	if !ok || herr != nil || !reflect.DeepEqual(got, reply) {
		t.Errorf("reply round trip: %+v, %v, %v", got, herr, ok)
	}
}

// TestEvalBinaryRefusesBadLayouts: a request cut short or with an unknown
// flag is invalid_request; a response cut short, with trailing bytes, an
// unknown kind or nested past the bound is "cannot tell" (ok false); a
// JSON error comes back as the host's error.
func TestEvalBinaryRefusesBadLayouts(t *testing.T) {
	good := EvalRequest{URL: "redis://h:1", Script: "return 1", Keys: []string{"k"}, Args: []string{}, TimeoutMS: 5}.EncodeBinary()
	for _, b := range [][]byte{{}, {0x01}, good[:7], good[:len("..")+4+4+8+2+3], append([]byte{0x01, 0x04}, good[2:]...), append([]byte{'{'}, good[1:]...)} {
		if _, werr := DecodeEvalBinary(b); werr == nil || werr.Code != CodeInvalidRequest {
			t.Errorf("DecodeEvalBinary(%x) = %v, want invalid_request", b, werr)
		}
	}
	deep := Reply{Kind: ReplyNull}
	for range evalMaxDepth + 1 {
		deep = Reply{Kind: ReplyArray, Array: []Reply{deep}}
	}
	ok := EncodeEvalReply(Reply{Kind: ReplyString, Str: "abc"})
	for _, b := range [][]byte{{}, {0x00}, ok[:len(ok)-1], append(bytes.Clone(ok), 0), {0x00, 'x'}, EncodeEvalReply(deep), {0x00, 'a', 0xff, 0xff, 0xff, 0xff}} {
		if _, _, ok := ParseEvalBinaryResponse(b); ok {
			t.Errorf("ParseEvalBinaryResponse(%x) ok, want cannot tell", b)
		}
	}
	_, herr, fine := ParseEvalBinaryResponse([]byte(`{"error":{"code":"noscript","message":"NOSCRIPT"}}`))
	if !fine || herr == nil || herr.Code != CodeNoScript {
		t.Errorf("a JSON error: %v, %v", herr, fine)
	}
}
