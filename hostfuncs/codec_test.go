package hostfuncs

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// strs are the awkward strings every encoder test runs through: escapes,
// HTML characters, U+2028/2029, control bytes, non-ASCII, the empty string.
var strs = []string{"", "plain", `q"b\s/`, "<a&b>", "line\u2028sep\u2029", "\x00\x01\b\f\n\r\t\x1f\x7f", "é世界😀", "token-4242-98765.0f1e"}

// sameJSON checks that EncodeJSON wrote exactly what encoding/json writes.
func sameJSON(t *testing.T, v any, got []byte, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%T: %v", v, err)
	}
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%T:\n got %s\nwant %s", v, got, want)
	}
}

func TestEncodeMatchesEncodingJSON(t *testing.T) {
	for _, s := range strs {
		e := Error{Code: s, Message: s}
		b, err := e.EncodeJSON()
		sameJSON(t, e, b, err)
		for _, v := range []interface{ EncodeJSON() ([]byte, error) }{
			PrepareDirRequest{Op: DirOpMkdir, Path: s},
			PrepareDirRequest{Op: DirOpStat, Path: s, Follow: true},
			PrepareDirRequest{Op: s, Path: s},
			NameRequest{Name: s},
			LockRequest{Name: s, Socket: s},
			LockRequest{Name: s},
			ReadRequest{Name: s, Limit: 4097},
			WriteRequest{Name: s, Temp: s, Data: []byte(s)},
			WriteRequest{Name: s},
			ListRequest{},
			LogRequest{Level: s, Event: s, Message: s, Detail: s},
			LogRequest{Level: "info", Event: "e", Message: s},
			OpenOutput{StateDir: s, StateRoot: s, Resume: true},
			OpenOutput{},
			NamesOutput{},
			NamesOutput{Token: s, Lock: s},
			NamesOutput{Token: s, Lock: s, LockSocket: s},
			ListOutput{},
			ListOutput{Files: []TokenFile{}},
			ListOutput{Files: []TokenFile{{Name: s, PID: 42, StartTime: s, Instance: s, Host: s, AgeSeconds: -3}, {}}},
			PruneOutput{},
			PruneOutput{Removed: []PrunedFile{{Name: s, Reason: s, Host: s}, {}}},
			WhoamiOutput{},
			WhoamiOutput{Chain: []Process{}},
			WhoamiOutput{PID: 7, StartTime: s, Stdio: s, InstanceSuffix: s, TokenFile: s, LockFile: s, StateDir: s, Error: s,
				Chain: []Process{{PID: 1, PPID: 2, Name: s, Args: []string{s, ""}, StartTime: s, Role: s}, {Args: []string{}}, {}}},
		} {
			b, err := v.EncodeJSON()
			sameJSON(t, v, b, err)
		}
	}
}

// TestEncodeInvalidUTF8 checks the one difference from encoding/json on
// strings: invalid UTF-8 is written as U+FFFD itself rather than as the
// escape \ufffd, which parses to the same string.
func TestEncodeInvalidUTF8(t *testing.T) {
	v := LogRequest{Level: "warn", Event: "e", Message: "bad \xff\xfe byte", Detail: "\xed\xa0\x80"}
	got, err := v.EncodeJSON()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(v)
	var g, w LogRequest
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil || g != w {
		t.Errorf("got %s (%+v), encoding/json %s (%+v)", got, g, want, w)
	}
}

// TestEncodeInspectRequest checks the one deliberate difference from
// encoding/json: "fd" is written for fstat, peer and fd_link, fd 0 included,
// and for no other operation.
func TestEncodeInspectRequest(t *testing.T) {
	r := InspectRequest{Ops: []InspectOp{
		{Op: OpFstat, FD: 0}, {Op: OpPeer, FD: 1}, {Op: OpStat, PID: "1", FD: 3}, {Op: OpFDLink, PID: PIDSelf, FD: 0},
		{Op: OpBootID}, {Op: OpSelf}, {Op: OpTimens}, {Op: OpCmdline, PID: "12"}, {Op: OpPidNS, PID: PIDSelf},
		{Op: OpFDs, PID: "self", Targets: []string{"pipe:[1]"}}, {Op: OpFDs, PID: "9", Targets: []string{}},
	}}
	got, err := r.EncodeJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ops":[{"op":"fstat","fd":0},{"op":"peer","fd":1},{"op":"stat","pid":"1"},{"op":"fd_link","pid":"self","fd":0},` +
		`{"op":"boot_id"},{"op":"self"},{"op":"timens"},{"op":"cmdline","pid":"12"},{"op":"pid_ns","pid":"self"},` +
		`{"op":"fds","pid":"self","targets":["pipe:[1]"]},{"op":"fds","pid":"9"}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got, _ = InspectRequest{Ops: []InspectOp{}}.EncodeJSON()
	if string(got) != `{"ops":[]}` {
		t.Errorf("empty: %s", got)
	}
}

// decodable pairs a codec's target with a fresh encoding/json target.
type decodable struct {
	name string
	mine func(b []byte) (any, error)
	std  func(b []byte) (any, error)
}

func pair[T any, P interface {
	*T
	DecodeJSON([]byte) error
}](name string) decodable {
	return decodable{
		name: name,
		mine: func(b []byte) (any, error) { var v T; err := P(&v).DecodeJSON(b); return normalize(v), err },
		std:  func(b []byte) (any, error) { var v T; err := json.Unmarshal(b, &v); return v, err },
	}
}

// normalize clears what a codec sets beyond encoding/json's reach
// (OpenInput.AppMissing, tagged "-").
func normalize(v any) any {
	if in, ok := v.(OpenInput); ok {
		in.AppMissing = false
		return in
	}
	return v
}

var decodables = []decodable{
	pair[OpenInput]("OpenInput"), pair[Facts]("Facts"), pair[InspectResponse]("InspectResponse"),
	pair[Empty]("Empty"), pair[ReadResponse]("ReadResponse"), pair[ListResponse]("ListResponse"),
	pair[DirStat]("DirStat"),
}

// decodeInputs are documents every decoder reads, valid and not.
var decodeInputs = []string{
	`{}`, `null`, `{}       `, " \n{ } \t", `{"error":{"code":"not_found","message":"gone"}}`, `{"error":null}`, `{"error":{}}`,
	`{"app":"a","state_root":"/s","instance":"","launchers":["x","y"]}`, `{"app":"a","instance":null,"launchers":null}`,
	`{"app":"a","launchers":[]}`, `{"app":"<\u003c>\ud83d\ude00 \"q\"","unknown":{"deep":[1,{"x":null}]},"app":"b"}`,
	`{"os":"linux","pid":100,"euid":-1,"home":"/h","xdg_state_home":"","args":["--a","\u00e9"],"env":{"MCP_RESUME":"off","X":null},"runtime":"go"}`,
	`{"os":"linux","pid":100,"env":{}}`,
	`{"os":"linux","pid":100,"cwd":"/ws/A","args":["--x=\udcff","--x=\ufffd"],"env":{"PATH":"/bin","\udcfe":"\udcff"}}`,
	"{\"cwd\":\"/ws/\xff\",\"args\":[\"--x=\xfe\"]}", `{"cwd":null}`, `{"cwd":1}`,
	`{"results":[{"dev":"2049","ino":"18446744073709551615"},{"dev":null},{"ino":5}]}`, `{"pid":1.5}`, `{"pid":1e3}`, `{"pid":"100"}`, `{"pid":99999999999999999999}`, `{"pid":-0}`,
	`{"results":[{"data":"aGVsbG8=","target":"t","type":"fifo","peer_pid":0},{"error":{"code":"permission","message":"no"}},{},null]}`,
	`{"results":[{"fds":[{"fd":0,"target":"pipe:[5]","flags":32768},{"fd":1,"target":"/dev/null","flags":-1}]},{"fds":[]},{"peer_pid":null,"args":"YXJncw=="}]}`,
	`{"results":[]}`, `{"results":null}`, `{"results":[{"data":"not base64!"}]}`, `{"results":[{"data":""}]}`,
	`{"data":"dG9rLUE="}`, `{"data":null}`, `{"data":""}`, `{"data":"dG9r\nLUE="}`,
	`{"files":[{"name":"token-1-2","type":"file","age_seconds":-5},{"name":"lock-1-2","age_seconds":30},{"name":"d","type":"dir"}]}`, `{"files":[]}`,
	`{"files":[{"name":"x","type":1}]}`,
	`{"type":"dir","uid":1000,"mode":1023}`, `{"type":"symlink","uid":0,"mode":511,"error":null}`, `{"uid":-1}`, `{"mode":"0700"}`,
	`{"bad":"\xff\xfe","app":"\ud800"}`, "{\"app\":\"\xff\xfe!\",\"state_root\":\"\xed\xa0\x80\"}", `{"APP":"x","State_Root":"/s","ERROR":{"CODE":"c"},"PID":3}`,
	"{\"\u212a\":1,\"\u017fTATE_ROOT\":\"/k\"}", `{"app":"a","App":"b"}`,
	``, `no response`, `[]`, `"s"`, `1`, `{`, `{"a":}`, `{"a":1,}`, `{} {}`, `{}x`, `{"app":1}`, `{"app":["x"]}`,
	`{"launchers":"x"}`, `{"launchers":[1]}`, `{"error":"x"}`, `{"error":{"code":1}}`, `{"results":{}}`, `{"results":[1]}`,
	`{"files":[{"age_seconds":"1"}]}`, `{"env":[]}`, `{"env":{"a":1}}`, `{"data":5}`, `{'a':1}`, `{"a":01}`, `{"a":NaN}`,
}

// TestDecodeMatchesEncodingJSON checks that every decoder accepts what
// encoding/json accepts, producing the same value, and refuses what it
// refuses.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, d := range decodables {
		for _, in := range decodeInputs {
			got, gerr := d.mine([]byte(in))
			want, werr := d.std([]byte(in))
			if (gerr != nil) != (werr != nil) {
				t.Errorf("%s(%q): error %v, encoding/json's %v", d.name, in, gerr, werr)
				continue
			}
			if werr == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("%s(%q):\n got %#v\nwant %#v", d.name, in, got, want)
			}
		}
	}
}

// FuzzDecode checks the decoders against encoding/json on any input.
func FuzzDecode(f *testing.F) {
	for _, in := range decodeInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, d := range decodables {
			got, gerr := d.mine(in)
			want, werr := d.std(in)
			if (gerr != nil) != (werr != nil) {
				t.Fatalf("%s(%q): error %v, encoding/json's %v", d.name, in, gerr, werr)
			}
			if werr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s(%q):\n got %#v\nwant %#v", d.name, in, got, want)
			}
		}
	})
}

// A member of the wrong kind names the option, what it must be and what it
// was, never the codec's internals; a missing or null app is told apart
// from an empty one.
func TestOpenInputOptionErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"app":"a","launchers":"npx"}`, `launchers must be a list of strings, not a string: give a list of process names, e.g. ["my-wrapper"]`},
		{`{"app":"a","launchers":["ok",5]}`, `launchers must be a list of strings, not a list holding a number: give a list of process names, e.g. ["my-wrapper"]`},
		{`{"app":"a","launchers":{"x":1}}`, `launchers must be a list of strings, not an object: give a list of process names, e.g. ["my-wrapper"]`},
		{`{"app":5}`, `app must be a string, not a number`},
		{`{"app":["a"]}`, `app must be a string, not a list`},
		{`{"app":"a","state_root":true}`, `state_root must be a string, not true or false: give an absolute path, or leave it out for the default`},
		{`{"app":"a","instance":7}`, `instance must be a string, not a number`},
	} {
		var in OpenInput
		err := in.DecodeJSON([]byte(c.in))
		var oe *OptionError
		if !errors.As(err, &oe) || err.Error() != c.want {
			t.Errorf("%s: error %v (%T)\nwant %s", c.in, err, err, c.want)
		}
	}
	for in, missing := range map[string]bool{`{"app":null}`: true, `{}`: true, `{"app":""}`: false, `{"app":"x"}`: false} {
		var v OpenInput
		if err := v.DecodeJSON([]byte(in)); err != nil || v.AppMissing != missing {
			t.Errorf("%s: AppMissing %v, error %v; want %v, nil", in, v.AppMissing, err, missing)
		}
	}
}
