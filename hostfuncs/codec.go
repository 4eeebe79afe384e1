package hostfuncs

// JSON codecs for the documents the plugin writes and reads, so that the
// plugin links neither reflection-based encoding/json nor fmt (a lean guest:
// reflection and fmt would add hundreds of kilobytes to plugin.wasm). This
// file encodes; decode.go decodes. Encoding quotes strings with
// jsontext.AppendQuote (github.com/go-json-experiment/json, the upstream of
// Go's encoding/json/v2) and escapes the document with encoding/json's
// HTMLEscape, neither of which uses reflection (jsontext's Encoder would add
// about 80 KB to the plugin).
//
// Each EncodeJSON writes what encoding/json's Marshal writes for the same
// value, byte for byte: the fields in declaration order, the omitempty tags
// honoured, nil slices as null, []byte as standard base64, and strings
// escaped the same way ('<', '>', '&', U+2028 and U+2029 as \u escapes). The
// one exception is invalid UTF-8 in a string: encoding/json writes each bad
// byte as the escape \ufffd, these codecs write the character U+FFFD itself
// (the same JSON string once parsed).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// encoder writes one JSON document. Strings are quoted by jsontext.AppendQuote
// (invalid UTF-8 becomes U+FFFD); done escapes the document for HTML and
// JavaScript as encoding/json does (json.HTMLEscape, which links no
// reflection). The encoder only places the punctuation.
type encoder struct {
	b     []byte
	comma bool // a value ends just before: the next member or element needs a comma
}

// sep writes the comma that separates this value from the previous one.
func (en *encoder) sep() {
	if en.comma {
		en.b = append(en.b, ',')
	}
}

// quote writes s as a JSON string.
func (en *encoder) quote(s string) {
	// The only error is invalid UTF-8, already replaced by U+FFFD.
	en.b, _ = jsontext.AppendQuote(en.b, s)
}

func (en *encoder) open(c byte)  { en.sep(); en.b = append(en.b, c); en.comma = false }
func (en *encoder) close(c byte) { en.b = append(en.b, c); en.comma = true }
func (en *encoder) begin()       { en.open('{') }
func (en *encoder) end()         { en.close('}') }

// name writes a member name and its colon.
func (en *encoder) name(n string) {
	en.sep()
	en.quote(n)
	en.b = append(en.b, ':')
	en.comma = false
}

// raw writes a literal or number.
func (en *encoder) raw(v string) { en.sep(); en.b = append(en.b, v...); en.comma = true }

// value writes a string value.
func (en *encoder) value(v string) { en.sep(); en.quote(v); en.comma = true }

func (en *encoder) str(n, v string)       { en.name(n); en.value(v) }
func (en *encoder) int(n string, v int64) { en.name(n); en.raw(strconv.FormatInt(v, 10)) }
func (en *encoder) boolean(n string, v bool) {
	en.name(n)
	en.raw(strconv.FormatBool(v))
}

// strOmit writes member n unless v is "" (omitempty).
func (en *encoder) strOmit(n, v string) {
	if v != "" {
		en.str(n, v)
	}
}

// intOmit writes member n unless v is 0 (omitempty).
func (en *encoder) intOmit(n string, v int64) {
	if v != 0 {
		en.int(n, v)
	}
}

// bytes writes v as base64, or null when nil.
func (en *encoder) bytes(n string, v []byte) {
	en.name(n)
	if v == nil {
		en.raw("null")
		return
	}
	en.value(base64.StdEncoding.EncodeToString(v))
}

// strings writes v as an array of strings, or null when nil.
func (en *encoder) strings(n string, v []string) {
	en.name(n)
	if v == nil {
		en.raw("null")
		return
	}
	en.open('[')
	for _, s := range v {
		en.value(s)
	}
	en.close(']')
}

// array writes member n as an array of count elements written by elem, or
// null when isNil.
func (en *encoder) array(n string, isNil bool, count int, elem func(i int)) {
	en.name(n)
	if isNil {
		en.raw("null")
		return
	}
	en.open('[')
	for i := 0; i < count; i++ {
		elem(i)
	}
	en.close(']')
}

// errorOmit writes member n as the object of e unless e is nil (omitempty).
func (en *encoder) errorOmit(n string, e *Error) {
	if e != nil {
		en.name(n)
		e.encode(en)
	}
}

// done returns the document with '<', '>', '&', U+2028 and U+2029 escaped
// as encoding/json escapes them. The error is always nil; it keeps the
// signature of json.Marshal.
func (en *encoder) done() ([]byte, error) {
	var out bytes.Buffer
	json.HTMLEscape(&out, en.b)
	return out.Bytes(), nil
}

// encodeObject runs members between '{' and '}' and returns the document.
func encodeObject(members func(en *encoder)) ([]byte, error) {
	en := &encoder{}
	en.begin()
	members(en)
	en.end()
	return en.done()
}

func (e *Error) encode(en *encoder) {
	en.begin()
	en.str("code", e.Code)
	en.str("message", e.Message)
	en.strOmit("reason", e.Reason)
	en.intOmit("generation", e.Generation)
	en.end()
}

// EncodeJSON returns the JSON of e, {"code","message","reason"?,
// "generation"?}: the Extism error string of a failed export. The error is
// always nil.
func (e Error) EncodeJSON() ([]byte, error) {
	en := &encoder{}
	e.encode(en)
	return en.done()
}

// EncodeJSON returns the JSON request of FnInspect. Unlike encoding/json with
// InspectOp's tags, it writes "fd" exactly for OpFstat, OpPeer and OpFDLink,
// fd 0 included (hostfuncs/README.md, mcp_resume_inspect), and never for
// other operations. The error is always nil.
func (r InspectRequest) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.array("ops", r.Ops == nil, len(r.Ops), func(i int) {
			op := r.Ops[i]
			en.begin()
			en.str("op", op.Op)
			en.strOmit("pid", op.PID)
			if op.Op == OpFstat || op.Op == OpPeer || op.Op == OpFDLink {
				en.int("fd", int64(op.FD))
			}
			if len(op.Targets) > 0 {
				en.strings("targets", op.Targets)
			}
			en.strOmit("ns", op.NS)
			en.strOmit("table", op.Table)
			en.end()
		})
	})
}

// EncodeJSON returns the JSON request of FnPrepareDir. The error is always
// nil.
func (r PrepareDirRequest) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.str("op", r.Op)
		en.str("path", r.Path)
		if r.Follow {
			en.boolean("follow", true)
		}
	})
}

// EncodeJSON returns the JSON request of FnLock. The error is always nil.
func (r LockRequest) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.str("name", r.Name)
		en.strOmit("socket", r.Socket)
		if r.WaitMS > 0 {
			en.int("wait_ms", int64(r.WaitMS))
		}
	})
}

// EncodeJSON returns the JSON request of FnUnlock. The error is always nil.
func (r UnlockRequest) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.str("name", r.Name)
		en.strOmit("socket", r.Socket)
	})
}

// EncodeJSON returns the JSON request of FnRemove. The error is always
// nil.
func (r NameRequest) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) { en.str("name", r.Name) })
}

// EncodeJSON returns the JSON request of FnRead. The error is always
// nil.
func (r ReadRequest) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.str("name", r.Name)
		en.int("limit", int64(r.Limit))
	})
}

// EncodeJSON returns the JSON request of FnWrite (Data in base64). The error
// is always nil.
func (r WriteRequest) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.str("name", r.Name)
		en.str("temp", r.Temp)
		en.bytes("data", r.Data)
	})
}

// EncodeJSON returns the JSON request of FnList, {}. The error is always
// nil.
func (r ListRequest) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {})
}

// EncodeJSON returns the JSON request of FnLog. The error is always nil.
func (r LogRequest) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.str("level", r.Level)
		en.str("event", r.Event)
		en.str("message", r.Message)
		en.strOmit("detail", r.Detail)
	})
}

// EncodeJSON returns the output of ExportOpen. The error is always nil.
func (o OpenOutput) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.str("state_dir", o.StateDir)
		en.str("state_root", o.StateRoot)
		en.boolean("resume", o.Resume)
	})
}

// EncodeJSON returns the output of ExportNames ({} when both names are
// empty). The error is always nil.
func (o NamesOutput) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.strOmit("token", o.Token)
		en.strOmit("lock", o.Lock)
		en.strOmit("lock_socket", o.LockSocket)
	})
}

// EncodeJSON returns the output of ExportList. The error is always nil.
func (o ListOutput) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.array("files", o.Files == nil, len(o.Files), func(i int) {
			f := o.Files[i]
			en.begin()
			en.str("name", f.Name)
			en.int("pid", int64(f.PID))
			en.str("start_time", f.StartTime)
			en.strOmit("instance", f.Instance)
			en.str("host", f.Host)
			en.int("age_seconds", f.AgeSeconds)
			en.end()
		})
	})
}

// EncodeJSON returns the output of ExportPrune. The error is always
// nil.
func (o PruneOutput) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.array("removed", o.Removed == nil, len(o.Removed), func(i int) {
			f := o.Removed[i]
			en.begin()
			en.str("name", f.Name)
			en.str("reason", f.Reason)
			en.str("host", f.Host)
			en.end()
		})
	})
}

// EncodeJSON returns the output of ExportWhoami. The error is always
// nil.
func (o WhoamiOutput) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.intOmit("pid", int64(o.PID))
		en.strOmit("start_time", o.StartTime)
		en.strOmit("stdio", o.Stdio)
		en.strOmit("trust", o.Trust)
		en.strOmit("instance_suffix", o.InstanceSuffix)
		en.strOmit("token_file", o.TokenFile)
		en.strOmit("lock_file", o.LockFile)
		en.str("state_dir", o.StateDir)
		en.array("chain", o.Chain == nil, len(o.Chain), func(i int) {
			p := o.Chain[i]
			en.begin()
			en.int("pid", int64(p.PID))
			en.int("ppid", int64(p.PPID))
			en.str("name", p.Name)
			en.strings("args", p.Args)
			en.str("start_time", p.StartTime)
			en.str("role", p.Role)
			en.end()
		})
		en.strOmit("error", o.Error)
	})
}

// EncodeJSON returns the JSON request of FnEval. The error is always nil.
func (r EvalRequest) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		en.str("url", r.URL)
		if r.Cluster {
			en.boolean("cluster", true)
		}
		en.strOmit("sha1", r.SHA1)
		en.strOmit("script", r.Script)
		en.strings("keys", r.Keys)
		en.strings("args", r.Args)
		en.int("timeout_ms", int64(r.TimeoutMS))
	})
}

// EncodeJSON returns the JSON response of FnEval (what a Go host answers).
// The error is always nil.
func (r EvalResponse) EncodeJSON() ([]byte, error) {
	return encodeObject(func(en *encoder) {
		if r.Error != nil {
			en.errorOmit("error", r.Error)
			return
		}
		en.name("reply")
		r.Reply.encode(en)
	})
}

// encode writes the reply as FnEval's JSON.
func (r *Reply) encode(en *encoder) {
	switch r.Kind {
	case ReplyInt:
		en.raw(strconv.FormatInt(r.Int, 10))
	case ReplyString:
		en.value(r.Str)
	case ReplyArray:
		en.open('[')
		for i := range r.Array {
			r.Array[i].encode(en)
		}
		en.close(']')
	case ReplyError:
		en.open('{')
		en.str("err", r.Str)
		en.end()
	default:
		en.raw("null")
	}
}

// MarshalJSON writes the reply as FnEval's JSON (for hosts that encode
// with encoding/json).
func (r Reply) MarshalJSON() ([]byte, error) {
	en := &encoder{}
	r.encode(en)
	return en.b, nil
}

// UnmarshalJSON reads a reply of FnEval's JSON (for hosts and tests that
// decode with encoding/json).
func (r *Reply) UnmarshalJSON(b []byte) error {
	var resp EvalResponse
	if err := resp.DecodeJSON(append(append([]byte(`{"reply":`), b...), '}')); err != nil {
		return err
	}
	*r = resp.Reply
	return nil
}
