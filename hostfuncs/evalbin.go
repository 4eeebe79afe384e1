package hostfuncs

// The binary form of FnEval (hostfuncs/README.md, "mcp_resume_eval", The
// binary form): the plugin encodes requests and decodes replies with it, a
// Go host decodes requests and encodes replies. Strings here are Go
// strings holding raw bytes: a key, an argument or a reply's string may
// be any bytes, which the JSON form could not carry.

import (
	"encoding/binary"
	"strconv"
)

// EvalBinaryForm is the first byte of an FnEval request in the binary form
// (a JSON request starts with '{').
const EvalBinaryForm byte = 0x01

// The flag bits of a binary FnEval request.
const (
	EvalFlagCluster byte = 0x01 // EvalRequest.Cluster
	EvalFlagSource  byte = 0x02 // the script is source (EVAL), else a SHA-1 (EVALSHA)
)

// evalMaxDepth bounds the nesting of a binary reply the plugin decodes; the
// handle store's scripts answer at most two levels.
const evalMaxDepth = 8

// EncodeBinary returns r in FnEval's binary form: EvalBinaryForm, the flags,
// timeout_ms (u32), the script (Script when set, else SHA1), the keys and
// the args (a u16 count, then each as a u32 length and its bytes) and the
// URL as the rest. It does not validate: a host refuses what breaks the
// contract. Keys or args beyond 65,535, or strings over 4 GiB, cannot be
// encoded; the plugin never makes them.
func (r EvalRequest) EncodeBinary() []byte {
	flags, script := byte(0), r.SHA1
	if r.Cluster {
		flags |= EvalFlagCluster
	}
	if r.Script != "" {
		flags |= EvalFlagSource
		script = r.Script
	}
	n := 2 + 4 + 4 + len(script) + 4 + len(r.URL)
	for _, k := range r.Keys {
		n += 4 + len(k)
	}
	for _, a := range r.Args {
		n += 4 + len(a)
	}
	b := make([]byte, 0, n)
	b = append(b, EvalBinaryForm, flags)
	b = binary.BigEndian.AppendUint32(b, uint32(r.TimeoutMS))
	b = appendB32(b, []byte(script))
	for _, list := range [2][]string{r.Keys, r.Args} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(list)))
		for _, s := range list {
			b = appendB32(b, []byte(s))
		}
	}
	return append(b, r.URL...)
}

// DecodeEvalBinary reads a binary FnEval request (first byte
// EvalBinaryForm) into an EvalRequest, Keys and Args never nil. It checks
// the layout only: CodeInvalidRequest for a missing form byte, an unknown
// flag bit, or a field cut short, saying which; the rules the JSON form
// shares (one of SHA1 and Script, the SHA-1's form, the timeout's range,
// the URL) are the host's to check on the result, as for JSON.
func DecodeEvalBinary(b []byte) (EvalRequest, *Error) {
	var q EvalRequest
	rd := byteReader{b: b}
	if rd.u8("the form byte") != int(EvalBinaryForm) && rd.bad == "" {
		rd.bad = "the first byte is not 0x01"
	}
	flags := byte(rd.u8("the flags"))
	if flags&^(EvalFlagCluster|EvalFlagSource) != 0 {
		rd.bad = "unknown flag bits " + strconv.Itoa(int(flags&^(EvalFlagCluster|EvalFlagSource)))
	}
	q.Cluster = flags&EvalFlagCluster != 0
	q.TimeoutMS = rd.u32("timeout_ms")
	script := string(rd.b32("the script"))
	if flags&EvalFlagSource != 0 {
		q.Script = script
	} else {
		q.SHA1 = script
	}
	q.Keys = make([]string, rd.u16("the count of keys"))
	for i := range q.Keys {
		q.Keys[i] = string(rd.b32("key " + strconv.Itoa(i)))
	}
	q.Args = make([]string, rd.u16("the count of args"))
	for i := range q.Args {
		q.Args[i] = string(rd.b32("arg " + strconv.Itoa(i)))
	}
	if rd.bad != "" {
		return EvalRequest{}, &Error{Code: CodeInvalidRequest, Message: "mcp_resume_eval binary request: " + rd.bad}
	}
	q.URL = string(rd.b)
	return q, nil
}

// EncodeEvalReply returns a successful binary FnEval response: 0x00 and
// reply in the binary encoding (a kind byte, ReplyNull..ReplyError, and its
// body: an i64, a u32-length string, or a u32 count of replies).
func EncodeEvalReply(reply Reply) []byte {
	return appendReply([]byte{CryptoStatusOK}, reply)
}

func appendReply(b []byte, r Reply) []byte {
	b = append(b, r.Kind)
	switch r.Kind {
	case ReplyInt:
		b = binary.BigEndian.AppendUint64(b, uint64(r.Int))
	case ReplyString, ReplyError:
		b = appendB32(b, []byte(r.Str))
	case ReplyArray:
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.Array)))
		for _, e := range r.Array {
			b = appendReply(b, e)
		}
	}
	return b
}

// ParseEvalBinaryResponse reads a binary FnEval response: the reply on
// 0x00; the host's error for a JSON error object; ok false for anything
// else (a reply cut short, an unknown kind, trailing bytes, nesting deeper
// than 8), which the plugin reads as "cannot tell".
func ParseEvalBinaryResponse(b []byte) (Reply, *Error, bool) {
	if len(b) > 0 && b[0] == CryptoStatusJSONFail {
		var resp EvalResponse
		if resp.DecodeJSON(b) != nil || resp.Error == nil {
			return Reply{}, nil, false
		}
		return Reply{}, resp.Error, true
	}
	if len(b) < 2 || b[0] != CryptoStatusOK {
		return Reply{}, nil, false
	}
	rd := byteReader{b: b[1:]}
	r := readReply(&rd, 0)
	return r, nil, rd.bad == "" && len(rd.b) == 0
}

// readReply reads one binary reply from rd, setting rd.bad when it does
// not follow the encoding.
func readReply(rd *byteReader, depth int) Reply {
	r := Reply{Kind: byte(rd.u8("a reply"))}
	switch r.Kind {
	case ReplyNull:
	case ReplyInt:
		if v := rd.take(8, "an integer"); v != nil {
			r.Int = int64(binary.BigEndian.Uint64(v))
		}
	case ReplyString, ReplyError:
		r.Str = string(rd.b32("a string"))
	case ReplyArray:
		n := rd.u32("an array's count")
		if depth >= evalMaxDepth || n > len(rd.b) { // each element takes a byte at least
			rd.bad = "an array too deep or too long"
			break
		}
		r.Array = make([]Reply, n)
		for i := 0; i < n && rd.bad == ""; i++ {
			r.Array[i] = readReply(rd, depth+1)
		}
	default:
		rd.bad = "an unknown reply kind"
	}
	return r
}
