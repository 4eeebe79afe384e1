package hostfuncs

// The binary form of handle_create, handle_get and handle_put
// (hostfuncs/README.md, "The handle store's exports", "Binary form"): the
// input starts with HandleBinaryForm, then fixed big-endian integers, the
// principal, the handle and the value's raw bytes; the outputs are fixed
// integers and the handle or the value. Values cross the Wasm boundary as
// raw bytes, without base64 or JSON. Linked by the plugin: no
// encoding/json, no fmt.

// handleBinaryFixed is the fixed part of a binary handle input: the form
// byte, the flags, four i64 (now_ms, generation, idle_ttl_ms, max_age_ms),
// the principal's u16 length and the handle's u8 length (with an empty
// principal and handle).
const handleBinaryFixed = 1 + 1 + 4*8 + 2 + 1

// handleFlagsKnown are the flag bits the binary input defines.
const handleFlagsKnown = HandleFlagNow | HandleFlagGeneration | HandleFlagIdleTTL | HandleFlagMaxAge | HandleFlagValue

// Binary output sizes: the fixed parts of HandleCreated (before the
// handle) and HandleValue (before the value), and HandleGeneration.
const (
	handleCreatedFixed = 4*8 + 1
	handleValueFixed   = 2 + 4*8
	handleGenBytes     = 8
)

// IsHandleBinary reports whether input is in the binary form: its first
// byte is HandleBinaryForm (a JSON input starts with '{' or a space).
func IsHandleBinary(input []byte) bool {
	return len(input) > 0 && input[0] == HandleBinaryForm
}

// Decode sets in from the input of a handle_* export in either form: the
// binary form (DecodeBinary) when IsHandleBinary, else JSON (DecodeJSON).
// The errors are theirs.
func (in *HandleInput) Decode(b []byte) *Error {
	if IsHandleBinary(b) {
		return in.DecodeBinary(b)
	}
	return in.DecodeJSON(b)
}

// malformedPrefix starts the message of a binary input that breaks the
// layout.
const malformedPrefix = "the binary input is malformed: "

// malformed is the invalid_option error with message msg (malformedPrefix
// and what is wrong). Not inlined: the plugin's code stays small.
//
//go:noinline
func malformed(msg string) *Error {
	return &Error{Code: CodeInvalidOption, Message: msg}
}

// DecodeBinary sets in from the binary input b of handle_create,
// handle_get or handle_put. Every *Set field follows the flags
// (PrincipalSet is always true; HandleSet when the handle is not empty);
// an integer whose flag is clear stays 0. in.Value aliases b (no copy):
// b must not change while in is used. The only error is CodeInvalidOption
// "the binary input is malformed: <what>": another first byte, shorter
// than the fixed part (37 bytes), a flag bit that is not defined, a
// principal or handle running past the end, or bytes after the handle
// without the value flag. The principal's UTF-8, its length, the handle's
// syntax and the integers' ranges are the store's to check, as after
// DecodeJSON.
func (in *HandleInput) DecodeBinary(b []byte) *Error {
	switch {
	case !IsHandleBinary(b):
		return malformed(malformedPrefix + "the first byte is not 0x01")
	case len(b) < handleBinaryFixed:
		return malformed(malformedPrefix + "shorter than its fixed part of 37 bytes")
	case b[1]&^handleFlagsKnown != 0:
		return malformed(malformedPrefix + "a flag bit that is not defined is set (only bits 0 to 4 are)")
	}
	flags := b[1]
	ints := [4]*int64{&in.NowMS, &in.Generation, &in.IdleTTLMS, &in.MaxAgeMS}
	sets := [4]*bool{&in.NowSet, &in.GenerationSet, &in.IdleTTLSet, &in.MaxAgeSet}
	for i := range ints {
		*sets[i] = flags&(1<<i) != 0
		if *sets[i] {
			*ints[i] = getInt(b[2+8*i:])
		}
	}
	p := 36
	n := int(b[34])<<8 | int(b[35])
	if len(b)-p < n+1 { // the principal, then the handle's length byte
		return malformed(malformedPrefix + "the principal runs past the end")
	}
	in.Principal, in.PrincipalSet = string(b[p:p+n]), true
	p += n
	n = int(b[p])
	p++
	if len(b)-p < n {
		return malformed(malformedPrefix + "the handle runs past the end")
	}
	in.Handle, in.HandleSet = string(b[p:p+n]), n > 0
	p += n
	in.ValueSet = flags&HandleFlagValue != 0
	switch {
	case in.ValueSet:
		in.Value = b[p:len(b):len(b)]
	case p < len(b):
		return malformed(malformedPrefix + "bytes follow the handle but the value flag (bit 4) is clear")
	}
	return nil
}

// AppendBinaryInput appends the binary form of in to dst and returns it: the
// flags from the *Set fields (an integer is also sent when it is not 0, as
// EncodeJSON does; a value when ValueSet or not nil), the principal and
// the handle truncated to 65535 and 255 bytes (longer ones are refused
// by the store as too long or not a handle anyway, so a host checks them
// before encoding when it must say so). For hosts and tests.
func (in HandleInput) AppendBinaryInput(dst []byte) []byte {
	var flags byte
	ints := [4]int64{in.NowMS, in.Generation, in.IdleTTLMS, in.MaxAgeMS}
	for i, set := range [4]bool{in.NowSet, in.GenerationSet, in.IdleTTLSet, in.MaxAgeSet} {
		if set || ints[i] != 0 {
			flags |= 1 << i
		}
	}
	if in.ValueSet || in.Value != nil {
		flags |= HandleFlagValue
	}
	p, h := in.Principal, in.Handle
	if len(p) > 0xffff {
		p = p[:0xffff]
	}
	if len(h) > 0xff {
		h = h[:0xff]
	}
	dst = append(dst, HandleBinaryForm, flags)
	for _, v := range ints {
		dst = appendInt(dst, v)
	}
	dst = append(dst, byte(len(p)>>8), byte(len(p)))
	dst = append(dst, p...)
	dst = append(dst, byte(len(h)))
	dst = append(dst, h...)
	return append(dst, in.Value...)
}

// EncodeBinary returns the binary form of in (AppendBinaryInput into a buffer
// of the exact size).
func (in HandleInput) EncodeBinary() []byte {
	return in.AppendBinaryInput(make([]byte, 0, handleBinaryFixed+len(in.Principal)+len(in.Handle)+len(in.Value)))
}

// packInts returns vs as big-endian i64 in a new buffer with room for
// extra more bytes.
func packInts(extra int, vs ...int64) []byte {
	b := make([]byte, 0, 8*len(vs)+extra)
	for _, v := range vs {
		b = appendInt(b, v)
	}
	return b
}

// appendInt appends v as a big-endian i64.
func appendInt(b []byte, v int64) []byte {
	for s := 56; s >= 0; s -= 8 {
		b = append(b, byte(v>>s))
	}
	return b
}

// getInt reads a big-endian i64 from the first 8 bytes of b.
func getInt(b []byte) int64 {
	_ = b[7]
	var v int64
	for _, c := range b[:8] {
		v = v<<8 | int64(c)
	}
	return v
}

// getInts reads len(vs) big-endian i64 from b (long enough) into vs.
func getInts(b []byte, vs ...*int64) {
	for i, v := range vs {
		*v = getInt(b[8*i:])
	}
}

// shortOutput is the error of a binary output that does not fit its
// layout.
type shortOutput string

func (e shortOutput) Error() string {
	return "the binary output of " + string(e) + " is malformed (too short, or a handle past the end)"
}

// EncodeBinary returns the binary output of handle_create: generation,
// idle_ttl_ms, max_age_ms, created_ms (i64 each), then the handle's u8
// length and bytes (a handle is 37 bytes; a longer one is cut to 255).
func (o HandleCreated) EncodeBinary() []byte {
	h := o.Handle
	if len(h) > 0xff {
		h = h[:0xff]
	}
	b := packInts(1+len(h), o.Generation, o.IdleTTLMS, o.MaxAgeMS, o.CreatedMS)
	return append(append(b, byte(len(h))), h...)
}

// DecodeBinary sets o from the binary output of handle_create. Errors: b
// shorter than its layout or with bytes after the handle.
func (o *HandleCreated) DecodeBinary(b []byte) error {
	if len(b) < handleCreatedFixed || len(b) != handleCreatedFixed+int(b[handleCreatedFixed-1]) {
		return shortOutput(ExportHandleCreate)
	}
	getInts(b, &o.Generation, &o.IdleTTLMS, &o.MaxAgeMS, &o.CreatedMS)
	o.Handle = string(b[handleCreatedFixed:])
	return nil
}

// HandleValueAt is where the plugin places the value in handle_get's binary
// output (the output's value_at): after the status byte and the record
// header of a read_open response (1 + 73 bytes), so that a value read on
// the hot path is output from the host's memory block as it is, with the
// output's fixed part written over the part before it: the value never
// enters the guest. A host reads value_at, never assumes it.
const HandleValueAt = 74

// EncodeBinary returns the binary output of handle_get: value_at (u16,
// HandleValueAt), generation, created_ms, idle_ttl_ms, max_age_ms (i64
// each), zero bytes up to value_at, then the value's bytes to the end.
func (o HandleValue) EncodeBinary() []byte {
	return append(o.EncodeBinaryHead(), o.Value...)
}

// EncodeBinaryHead is the part of handle_get's binary output before the
// value: HandleValueAt bytes.
func (o HandleValue) EncodeBinaryHead() []byte {
	b := make([]byte, 2, HandleValueAt+len(o.Value))
	b[0], b[1] = 0, HandleValueAt
	for _, v := range [...]int64{o.Generation, o.CreatedMS, o.IdleTTLMS, o.MaxAgeMS} {
		b = appendInt(b, v)
	}
	return b[:HandleValueAt]
}

// DecodeBinary sets o from the binary output of handle_get. o.Value
// aliases b (never nil: an empty value is empty). Error: b shorter than
// its fixed part (34 bytes), or a value_at before the fixed part's end or
// past b's.
func (o *HandleValue) DecodeBinary(b []byte) error {
	if len(b) < handleValueFixed {
		return shortOutput(ExportHandleGet)
	}
	at := int(b[0])<<8 | int(b[1])
	if at < handleValueFixed || at > len(b) {
		return shortOutput(ExportHandleGet)
	}
	getInts(b[2:], &o.Generation, &o.CreatedMS, &o.IdleTTLMS, &o.MaxAgeMS)
	o.Value = b[at:len(b):len(b)]
	return nil
}

// EncodeBinary returns the binary output of handle_put: the new
// generation, an i64.
func (o HandleGeneration) EncodeBinary() []byte {
	return packInts(0, o.Generation)
}

// DecodeBinary sets o from the binary output of handle_put. Error: b is
// not 8 bytes.
func (o *HandleGeneration) DecodeBinary(b []byte) error {
	if len(b) != handleGenBytes {
		return shortOutput(ExportHandlePut)
	}
	getInts(b, &o.Generation)
	return nil
}

// JSONOnly refuses a binary input to a handle export that has no binary
// form (every one but handle_create, handle_get and handle_put):
// invalid_option, nil for any other input (hostfuncs/README.md, "Binary
// form").
func JSONOnly(input []byte) *Error {
	if IsHandleBinary(input) {
		return &Error{Code: CodeInvalidOption, Message: "the binary input form is for handle_create, handle_get and handle_put only: send this export JSON"}
	}
	return nil
}
