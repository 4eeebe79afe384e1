package hostfuncs

// Decoding for the codecs of codec.go: each DecodeJSON reads tokens with
// the jsontext package and reads what encoding/json's Unmarshal reads into
// the same type: unknown members are skipped, null leaves a field unset, a
// repeated member wins over the earlier one, invalid UTF-8 and lone
// surrogates become U+FFFD, whitespace may follow the document (hosts pad
// it, see Pad8), an integer field rejects fractions, exponents and
// overflow, and a member name matches a field's exactly or else
// case-insensitively. The error messages are these codecs' own.
//
// It is a little over 500 lines because the token reader and the
// DecodeJSON methods built on it change together (a rule of the reader is
// only tested through the methods); split, each half would need the other
// to be read.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// decoder reads one JSON document token by token.
type decoder struct {
	d *jsontext.Decoder
}

// errTrailing is the error of a document followed by more than whitespace.
var errTrailing = errors.New("wire: invalid data after the top-level JSON value")

// decodeObject reads b, a JSON object (or null, which sets nothing),
// calling member for each member name; member must read or skip the value.
// Anything but whitespace after the object is an error.
func decodeObject(b []byte, member func(d *decoder, name string) error) error {
	d := &decoder{jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}
	if err := d.object(member); err != nil {
		return err
	}
	if _, err := d.d.ReadToken(); err != io.EOF {
		if err == nil {
			err = errTrailing
		}
		return err
	}
	return nil
}

// field returns the field name among fields that name matches: itself when
// it is one of them, else the first one equal to it under Unicode case
// folding (as encoding/json matches member names), else name.
func field(name string, fields ...string) string {
	for _, f := range fields {
		if name == f {
			return f
		}
	}
	for _, f := range fields {
		if strings.EqualFold(name, f) {
			return f
		}
	}
	return name
}

// typeError says that the JSON value of kind got cannot go where want goes.
func typeError(want string, got jsontext.Kind) error {
	return &kindError{want: want, got: got}
}

// kindError is a JSON value of the wrong kind: a string where an array
// goes, and so on.
type kindError struct {
	want string
	got  jsontext.Kind
}

func (e *kindError) Error() string {
	return "wire: cannot read JSON " + e.got.String() + " as " + e.want
}

// kindName names a JSON value's kind for people: "a string", "a number",
// "true or false", "null", "an object", "a list".
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "a list"
	}
	return "an invalid value"
}

// OptionError is an open input member whose JSON value has the wrong kind,
// in words that name the option, the kind expected and the kind given, the
// same from every host (the hosts pass their users' values through as they
// are; hostfuncs/README.md, "Plugin exports", open). App is true for the
// app member (code invalid_app), false for the options (invalid_option).
type OptionError struct {
	Option string
	Want   string // "a string", "a list of strings"
	Got    string // kindName of the value given, "a list holding a number" for a bad element
	Hint   string // what to do, "" for none
}

// Error is "<option> must be <want>, not <got>[: <hint>]".
func (e *OptionError) Error() string {
	msg := e.Option + " must be " + e.Want + ", not " + e.Got
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

// member decodes one open input member with read and turns a wrong kind
// into an *OptionError for option; elem is true when the kind error came
// from an element of the list.
func member(option, want, hint string, read func() error) error {
	err := read()
	ke, ok := err.(*kindError)
	if !ok {
		return err
	}
	got := kindName(ke.got)
	if ke.want != "array" && want != "a string" {
		got = "a list holding " + got
	}
	return &OptionError{Option: option, Want: want, Got: got, Hint: hint}
}

// object reads an object (or null), calling member for each member name.
func (d *decoder) object(member func(d *decoder, name string) error) error {
	t, err := d.d.ReadToken()
	if err != nil {
		return err
	}
	switch t.Kind() {
	case 'n':
		return nil
	case '{':
	default:
		return typeError("object", t.Kind())
	}
	for d.d.PeekKind() != '}' {
		t, err := d.d.ReadToken()
		if err != nil {
			return err
		}
		if err := member(d, t.String()); err != nil {
			return err
		}
	}
	_, err = d.d.ReadToken()
	return err
}

// array reads an array (or null), calling elem for each element. It reports
// whether the value was an array (false for null).
func (d *decoder) array(elem func(d *decoder) error) (bool, error) {
	t, err := d.d.ReadToken()
	if err != nil {
		return false, err
	}
	switch t.Kind() {
	case 'n':
		return false, nil
	case '[':
	default:
		return false, typeError("array", t.Kind())
	}
	for d.d.PeekKind() != ']' {
		if err := elem(d); err != nil {
			return true, err
		}
	}
	_, err = d.d.ReadToken()
	return true, err
}

// skip reads and discards one value.
func (d *decoder) skip() error { return d.d.SkipValue() }

// str reads a string into p; null leaves p unset.
func (d *decoder) str(p *string) error {
	t, err := d.d.ReadToken()
	if err != nil {
		return err
	}
	switch t.Kind() {
	case 'n':
		return nil
	case '"':
		*p = t.String()
		return nil
	}
	return typeError("string", t.Kind())
}

// int64 reads an integer into p; null leaves p unset.
func (d *decoder) int64(p *int64) error {
	if d.d.PeekKind() != '0' {
		t, err := d.d.ReadToken()
		if err != nil {
			return err
		}
		if t.Kind() == 'n' {
			return nil
		}
		return typeError("integer", t.Kind())
	}
	v, err := d.d.ReadValue()
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return errors.New("wire: cannot read JSON number " + string(v) + " as an integer")
	}
	*p = n
	return nil
}

// int reads an integer into p; null leaves p unset.
func (d *decoder) int(p *int) error {
	n := int64(*p)
	if err := d.int64(&n); err != nil {
		return err
	}
	if int64(int(n)) != n {
		return errors.New("wire: integer " + strconv.FormatInt(n, 10) + " overflows int")
	}
	*p = int(n)
	return nil
}

// bytes reads a base64 string into p (standard encoding, as encoding/json);
// null leaves p unset.
func (d *decoder) bytes(p *[]byte) error {
	var s string
	null := true
	t, err := d.d.ReadToken()
	if err != nil {
		return err
	}
	switch t.Kind() {
	case 'n':
	case '"':
		s, null = t.String(), false
	default:
		return typeError("base64 string", t.Kind())
	}
	if null {
		return nil
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, []byte(s))
	if err != nil {
		return err
	}
	*p = b[:n]
	return nil
}

// slice reads an array into *p, each element decoded by elem into a zero
// T, as encoding/json fills a slice: null sets *p to nil, [] to an empty,
// non-nil slice.
func slice[T any](d *decoder, p *[]T, elem func(d *decoder, v *T) error) error {
	out := []T{}
	isArray, err := d.array(func(d *decoder) error {
		var zero T
		out = append(out, zero)
		return elem(d, &out[len(out)-1])
	})
	if err != nil {
		return err
	}
	if !isArray {
		out = nil
	}
	*p = out
	return nil
}

// strings reads an array of strings into p; null sets p to nil.
func (d *decoder) strings(p *[]string) error {
	return slice(d, p, (*decoder).str)
}

// error reads an Error object into *p, or sets *p to nil for null.
func (d *decoder) errorObj(p **Error) error {
	if d.d.PeekKind() == 'n' {
		*p = nil
		return d.skip()
	}
	e := &Error{}
	*p = e
	return d.object(func(d *decoder, name string) error {
		switch field(name, "code", "message", "reason", "generation") {
		case "code":
			return d.str(&e.Code)
		case "message":
			return d.str(&e.Message)
		case "reason":
			return d.str(&e.Reason)
		case "generation":
			return d.int64(&e.Generation)
		}
		return d.skip()
	})
}

// DecodeJSON sets in from the JSON input of ExportOpen. Errors: the
// document is not JSON or not an object; an *OptionError for a member of
// the wrong kind (the hosts pass their users' values through unchanged, so
// this names what the user gave). An app member that is missing or null
// sets AppMissing.
func (in *OpenInput) DecodeJSON(b []byte) error {
	app := false
	err := decodeObject(b, func(d *decoder, name string) error {
		switch field(name, OpenMembers...) {
		case "app":
			if d.d.PeekKind() == 'n' {
				app = false
				return d.skip()
			}
			app = true
			return member("app", "a string", "", func() error { return d.str(&in.App) })
		case "state_root":
			return member("state_root", "a string", "give an absolute path, or leave it out for the default", func() error { return d.str(&in.StateRoot) })
		case "instance":
			if d.d.PeekKind() == 'n' {
				in.Instance = nil
				return d.skip()
			}
			var s string
			in.Instance = &s
			return member("instance", "a string", "", func() error { return d.str(&s) })
		case "launchers":
			return member("launchers", "a list of strings", `give a list of process names, e.g. ["my-wrapper"]`, func() error { return d.strings(&in.Launchers) })
		case "caller":
			return member("caller", "a string", "", func() error { return d.str(&in.Caller) })
		}
		return d.skip()
	})
	in.AppMissing = !app
	return err
}

// CallerOf returns the caller member of an open input (ExportOpen or
// ExportHandlesOpen) when it is a string, else "": it reads nothing else,
// so an input that DecodeJSON refuses for another member still tells in
// whose names to word that error.
func CallerOf(b []byte) string {
	c := ""
	_ = decodeObject(b, func(d *decoder, name string) error {
		if field(name, "caller") == "caller" && d.d.PeekKind() == '"' {
			return d.str(&c)
		}
		return d.skip()
	})
	return c
}

// DecodeJSON sets w from the JSON input of ExportWhoami; empty input (no
// document at all) is the zero WhoamiInput. Errors: not JSON, not an
// object; an *OptionError for a pid that is not a number.
func (w *WhoamiInput) DecodeJSON(b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 {
		*w = WhoamiInput{}
		return nil
	}
	return decodeObject(b, func(d *decoder, name string) error {
		if field(name, "pid") == "pid" {
			return member("pid", "a whole number", "", func() error { return d.int(&w.PID) })
		}
		return d.skip()
	})
}

// DecodeJSON sets f from the JSON response of FnFacts. Errors as for
// OpenInput.DecodeJSON.
func (f *Facts) DecodeJSON(b []byte) error {
	return decodeObject(b, func(d *decoder, name string) error {
		switch field(name, "os", "pid", "euid", "home", "xdg_state_home", "cwd", "args", "env", "runtime", "stdio_fds", "error") {
		case "os":
			return d.str(&f.OS)
		case "pid":
			return d.int(&f.PID)
		case "euid":
			return d.int(&f.EUID)
		case "home":
			return d.str(&f.Home)
		case "xdg_state_home":
			return d.str(&f.XDGStateHome)
		case "cwd":
			return d.str(&f.Cwd)
		case "args":
			return d.strings(&f.Args)
		case "env":
			if d.d.PeekKind() == 'n' {
				return d.skip()
			}
			if f.Env == nil {
				f.Env = map[string]string{}
			}
			return d.object(func(d *decoder, key string) error {
				var v string
				err := d.str(&v)
				f.Env[key] = v
				return err
			})
		case "runtime":
			return d.str(&f.Runtime)
		case "stdio_fds":
			return slice(d, &f.StdioFDs, (*decoder).int)
		case "error":
			return d.errorObj(&f.Error)
		}
		return d.skip()
	})
}

// DecodeJSON sets r from the JSON response of FnInspect (Data and Args in
// base64). Errors as for OpenInput.DecodeJSON.
func (r *InspectResponse) DecodeJSON(b []byte) error {
	return decodeObject(b, func(d *decoder, name string) error {
		switch field(name, "results", "error") {
		case "results":
			return slice(d, &r.Results, func(d *decoder, v *InspectResult) error { return v.decode(d) })
		case "error":
			return d.errorObj(&r.Error)
		}
		return d.skip()
	})
}

func (r *InspectResult) decode(d *decoder) error {
	return d.object(func(d *decoder, name string) error {
		switch field(name, "data", "args", "target", "fds", "type", "peer_pid", "dev", "ino", "error") {
		case "data":
			return d.bytes(&r.Data)
		case "args":
			return d.bytes(&r.Args)
		case "target":
			return d.str(&r.Target)
		case "fds":
			return slice(d, &r.FDs, func(d *decoder, fd *FD) error {
				return d.object(func(d *decoder, name string) error {
					switch field(name, "fd", "target", "flags") {
					case "fd":
						return d.int(&fd.FD)
					case "target":
						return d.str(&fd.Target)
					case "flags":
						return d.int(&fd.Flags)
					}
					return d.skip()
				})
			})
		case "type":
			return d.str(&r.Type)
		case "dev":
			return d.str(&r.Dev)
		case "ino":
			return d.str(&r.Ino)
		case "peer_pid":
			if d.d.PeekKind() == 'n' {
				r.PeerPID = nil
				return d.skip()
			}
			var n int
			r.PeerPID = &n
			return d.int(&n)
		case "error":
			return d.errorObj(&r.Error)
		}
		return d.skip()
	})
}

// DecodeJSON sets r from the JSON response of FnPrepareDir. Errors as for
// OpenInput.DecodeJSON.
func (r *DirStat) DecodeJSON(b []byte) error {
	return decodeObject(b, func(d *decoder, name string) error {
		switch field(name, "type", "uid", "mode", "error") {
		case "type":
			return d.str(&r.Type)
		case "uid":
			return d.int(&r.UID)
		case "mode":
			return d.int(&r.Mode)
		case "error":
			return d.errorObj(&r.Error)
		}
		return d.skip()
	})
}

// DecodeJSON sets e from the JSON response of FnWrite,
// FnRemove, FnLock or FnLog. Errors as for OpenInput.DecodeJSON.
func (e *Empty) DecodeJSON(b []byte) error {
	return decodeObject(b, func(d *decoder, name string) error {
		if field(name, "error") == "error" {
			return d.errorObj(&e.Error)
		}
		return d.skip()
	})
}

// DecodeJSON sets r from the JSON response of FnRead (Data in base64).
// Errors as for OpenInput.DecodeJSON.
func (r *ReadResponse) DecodeJSON(b []byte) error {
	return decodeObject(b, func(d *decoder, name string) error {
		switch field(name, "data", "error") {
		case "data":
			return d.bytes(&r.Data)
		case "error":
			return d.errorObj(&r.Error)
		}
		return d.skip()
	})
}

// DecodeJSON sets r from the JSON response of FnList. Errors as for
// OpenInput.DecodeJSON.
func (r *ListResponse) DecodeJSON(b []byte) error {
	return decodeObject(b, func(d *decoder, name string) error {
		switch field(name, "files", "error") {
		case "files":
			return slice(d, &r.Files, func(d *decoder, e *ListEntry) error {
				return d.object(func(d *decoder, name string) error {
					switch field(name, "name", "type", "age_seconds") {
					case "name":
						return d.str(&e.Name)
					case "type":
						return d.str(&e.Type)
					case "age_seconds":
						return d.int64(&e.AgeSeconds)
					}
					return d.skip()
				})
			})
		case "error":
			return d.errorObj(&r.Error)
		}
		return d.skip()
	})
}

// DecodeJSON sets r from the JSON response of FnEval. Errors as for
// OpenInput.DecodeJSON, and for a reply that is not null, an integer, a
// string, an array of replies or {"err": string}.
func (r *EvalResponse) DecodeJSON(b []byte) error {
	return decodeObject(b, func(d *decoder, name string) error {
		switch field(name, "reply", "error") {
		case "reply":
			return d.reply(&r.Reply)
		case "error":
			return d.errorObj(&r.Error)
		}
		return d.skip()
	})
}

// reply reads one reply of FnEval into p.
func (d *decoder) reply(p *Reply) error {
	switch k := d.d.PeekKind(); k {
	case 'n':
		p.Kind = ReplyNull
		return d.skip()
	case '0':
		p.Kind = ReplyInt
		return d.int64(&p.Int)
	case '"':
		p.Kind = ReplyString
		return d.str(&p.Str)
	case '[':
		p.Kind, p.Array = ReplyArray, []Reply{}
		_, err := d.array(func(d *decoder) error {
			p.Array = append(p.Array, Reply{})
			return d.reply(&p.Array[len(p.Array)-1])
		})
		return err
	case '{':
		p.Kind = ReplyError
		return d.object(func(d *decoder, name string) error {
			if field(name, "err") == "err" {
				return d.str(&p.Str)
			}
			return d.skip()
		})
	default:
		return typeError("reply", k)
	}
}
