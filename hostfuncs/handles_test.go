package hostfuncs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestHandleEncodersMatchEncodingJSON(t *testing.T) {
	for _, s := range strs {
		for _, v := range []interface{ EncodeJSON() ([]byte, error) }{
			Error{Code: s, Message: s, Reason: s, Generation: 7},
			Error{Code: CodeConflict, Message: s, Generation: 2},
			HandlesOpenOutput{StateDir: s, StateRoot: s, IdleTTLMS: 1, MaxAgeMS: 2, TombstoneMS: 0, MaxHandles: 3, MaxValueBytes: 4, Shards: 64},
			HandleCreated{Handle: s, Generation: 1, IdleTTLMS: 5, MaxAgeMS: 6, CreatedMS: -7},
			HandleValue{Value: []byte(s), Generation: 9, CreatedMS: 1, IdleTTLMS: 2, MaxAgeMS: 3},
			HandleValue{},
			HandleGeneration{Generation: 12},
			HandleTouched{Generation: 1, IdleTTLMS: 2, MaxAgeMS: 3},
			HandleExists{Exists: true},
			HandleExists{},
			HandleListOutput{},
			HandleListOutput{Handles: []HandleEntry{}, Shards: 1},
			HandleListOutput{Handles: []HandleEntry{{Key: s, State: HandleLive, Generation: 3, Size: 10, AgeMS: 5, IdleMS: 1}, {Key: s, State: HandleEvicted}}, Live: 1, Tombstones: 1, Shards: 64, Bytes: 10},
			HandleGCOutput{ExpiredIdle: 1, ExpiredMaxAge: 2, TombstonesDropped: 3, OrphansRemoved: 4, TempsRemoved: 5, Live: 6},
		} {
			b, err := v.EncodeJSON()
			sameJSON(t, v, b, err)
		}
	}
}

func TestHandleInputDecode(t *testing.T) {
	var in HandleInput
	doc := `{"handle": "mrh1_x", "principal": "p\u00e9", "value": "aGk=", "generation": 3, "idle_ttl_ms": 4, "max_age_ms": 5, "now_ms": 6, "other": [1]}  `
	if werr := in.DecodeJSON([]byte(doc)); werr != nil {
		t.Fatal(werr)
	}
	var want HandleInput
	if err := json.Unmarshal([]byte(doc), &want); err != nil {
		t.Fatal(err)
	}
	want.HandleSet, want.PrincipalSet, want.ValueSet, want.GenerationSet, want.IdleTTLSet, want.MaxAgeSet, want.NowSet = true, true, true, true, true, true, true
	if !reflect.DeepEqual(in, want) {
		t.Errorf("decoded %+v, want %+v", in, want)
	}
	// Round trip through the encoder.
	b, _ := in.EncodeJSON()
	var again HandleInput
	if werr := again.DecodeJSON(b); werr != nil || !reflect.DeepEqual(again, in) {
		t.Errorf("round trip %s: %+v %v", b, again, werr)
	}
	for doc, code := range map[string]string{
		`{"handle": 5}`:                      CodeInvalidHandle,
		`{"principal": 5}`:                   CodeInvalidPrincipal,
		`{"principal": ["a"]}`:               CodeInvalidPrincipal,
		"{\"principal\": \"\xff\"}":          CodeInvalidPrincipal,
		`{"principal": "\ud800"}`:            CodeInvalidPrincipal,
		`{"value": 5}`:                       CodeInvalidValue,
		`{"value": "not base64"}`:            CodeInvalidValue,
		`{"generation": "2"}`:                CodeInvalidOption,
		`{"generation": 1.5}`:                CodeInvalidOption,
		`{"now_ms": true}`:                   CodeInvalidOption,
		`[1]`:                                CodeInvalidOption,
		`{"principal": "a"} x`:               CodeInvalidOption,
		``:                                   CodeInvalidOption,
		`{"principal": "a", "handle": null}`: "",
	} {
		var in HandleInput
		werr := in.DecodeJSON([]byte(doc))
		if code == "" && werr != nil || code != "" && (werr == nil || werr.Code != code) {
			t.Errorf("DecodeJSON(%q) = %v, want code %q", doc, werr, code)
		}
		if werr != nil && strings.Contains(werr.Message, "\xff") {
			t.Errorf("message %q quotes the input", werr.Message)
		}
	}
	var gen HandleInput
	if werr := gen.DecodeJSON([]byte(`{"generation": "2"}`)); werr == nil || werr.Message != "generation must be a whole number, not a string" {
		t.Errorf("generation message: %v", werr)
	}
}

func TestHandlesOpenInputDecode(t *testing.T) {
	var in HandlesOpenInput
	if err := in.DecodeJSON([]byte(`{"app": "a", "state_root": "/r", "idle_ttl_ms": 1, "max_age_ms": 2, "tombstone_ms": 0, "max_handles": 4, "max_value_bytes": 5, "lock_wait_ms": null}`)); err != nil {
		t.Fatal(err)
	}
	if in.App != "a" || in.StateRoot != "/r" || in.IdleTTLMS != 1 || in.MaxAgeMS != 2 || in.MaxHandles != 4 || in.MaxValueBytes != 5 || in.AppMissing ||
		!in.Given["tombstone_ms"] || in.Given["lock_wait_ms"] {
		t.Errorf("decoded %+v", in)
	}
	for doc, want := range map[string]string{
		`{"app": 1}`:                       "app must be a string, not a number",
		`{"app": "a", "max_handles": "9"}`: "max_handles must be a whole number, not a string",
		`{"app": "a", "state_root": 1}`:    "state_root must be a string, not a number: give an absolute path, or leave it out for the default",
	} {
		var in HandlesOpenInput
		err := in.DecodeJSON([]byte(doc))
		if err == nil || err.Error() != want {
			t.Errorf("DecodeJSON(%s) = %v, want %q", doc, err, want)
		}
	}
	var none HandlesOpenInput
	if err := none.DecodeJSON([]byte(`{}`)); err != nil || !none.AppMissing {
		t.Errorf("{}: %v, AppMissing %v", err, none.AppMissing)
	}
}
