package hostfuncs

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// TestHandleBinaryInputRoundTrip encodes inputs in the binary form, decodes
// them and compares, and checks the layout byte by byte for one input.
func TestHandleBinaryInputRoundTrip(t *testing.T) {
	for _, in := range []HandleInput{
		{Principal: "", PrincipalSet: true},
		{Principal: "alice", PrincipalSet: true, Value: []byte("hello"), ValueSet: true, IdleTTLMS: 5, IdleTTLSet: true, MaxAgeMS: 6, MaxAgeSet: true, NowMS: 1767225600000, NowSet: true},
		{Handle: "mrh1_" + strings.Repeat("A", 32), HandleSet: true, Principal: "pé\x00", PrincipalSet: true},
		{Handle: "h", HandleSet: true, Principal: strings.Repeat("p", 1025), PrincipalSet: true, Value: []byte{}, ValueSet: true, Generation: -3, GenerationSet: true},
		{Handle: "h", HandleSet: true, Principal: "p", PrincipalSet: true, Value: bytes.Repeat([]byte{0, 1, 0xff}, 1000), ValueSet: true, Generation: 1 << 62, GenerationSet: true, NowMS: -1, NowSet: true},
	} {
		b := in.EncodeBinary()
		if cap(b) != len(b) {
			t.Errorf("EncodeBinary: len %d cap %d, want an exact buffer", len(b), cap(b))
		}
		var got HandleInput
		if werr := got.Decode(b); werr != nil {
			t.Fatalf("decode %x: %v", b, werr)
		}
		if in.Value == nil && !in.ValueSet {
			got.Value = nil
		}
		if !reflect.DeepEqual(got, in) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, in)
		}
	}
	in := HandleInput{Handle: "hh", Principal: "al", PrincipalSet: true, Value: []byte("v"), ValueSet: true, Generation: 2, GenerationSet: true, NowMS: 258, NowSet: true}
	want := "01" + "13" + // form, flags now|generation|value
		"0000000000000102" + "0000000000000002" + "0000000000000000" + "0000000000000000" +
		"0002" + "616c" + "02" + "6868" + "76"
	if got := hex.EncodeToString(in.EncodeBinary()); got != want {
		t.Errorf("layout\n got %s\nwant %s", got, want)
	}
	// AppendBinaryInput appends.
	if b := in.AppendBinaryInput([]byte("xy")); string(b[:2]) != "xy" || hex.EncodeToString(b[2:]) != want {
		t.Errorf("AppendBinaryInput: %x", b)
	}
}

// TestHandleBinaryInputMatchesJSON decodes the same input given in both
// forms to the same HandleInput.
func TestHandleBinaryInputMatchesJSON(t *testing.T) {
	doc := `{"handle": "mrh1_x", "principal": "p\u00e9", "value": "aGk=", "generation": 3, "idle_ttl_ms": 4, "max_age_ms": 5, "now_ms": 6}`
	var fromJSON, fromBinary HandleInput
	if werr := fromJSON.Decode([]byte(doc)); werr != nil {
		t.Fatal(werr)
	}
	if werr := fromBinary.Decode(fromJSON.EncodeBinary()); werr != nil {
		t.Fatal(werr)
	}
	if !reflect.DeepEqual(fromJSON, fromBinary) {
		t.Errorf("JSON %+v\nbinary %+v", fromJSON, fromBinary)
	}
}

// TestHandleBinaryInputMalformed feeds inputs that break the layout: each
// is invalid_option "the binary input is malformed: ...", never a panic.
func TestHandleBinaryInputMalformed(t *testing.T) {
	good := HandleInput{Handle: "hh", Principal: "al", PrincipalSet: true}.EncodeBinary()
	withPrincipalLen := func(n uint16) []byte {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint16(b[34:], n)
		return b
	}
	withFlags := func(f byte) []byte {
		b := bytes.Clone(good)
		b[1] = f
		return b
	}
	for what, b := range map[string][]byte{
		"shorter than its fixed part":    good[:36],
		"only the form byte":             {HandleBinaryForm},
		"principal runs past the end":    withPrincipalLen(5),
		"principal takes the handle len": withPrincipalLen(4),
		"handle runs past the end":       append(bytes.Clone(good[:len(good)-3]), 9, 'h'),
		"flag bit 5":                     withFlags(1 << 5),
		"flag bit 7":                     withFlags(1 << 7),
		"bytes without the value flag":   append(bytes.Clone(good), 'v'),
	} {
		var in HandleInput
		werr := in.Decode(b)
		if werr == nil || werr.Code != CodeInvalidOption || !strings.HasPrefix(werr.Message, "the binary input is malformed: ") {
			t.Errorf("%s (%x): %v, want invalid_option, the binary input is malformed", what, b, werr)
		}
	}
	for _, b := range [][]byte{nil, {}, {0x02}, []byte("{}")} {
		var in HandleInput
		if werr := in.DecodeBinary(b); werr == nil || werr.Code != CodeInvalidOption {
			t.Errorf("DecodeBinary(%q) = %v, want invalid_option", b, werr)
		}
	}
	// Every truncation of a full input is refused or decodes within bounds.
	full := HandleInput{Handle: "hh", Principal: "al", PrincipalSet: true, Value: []byte("vv"), ValueSet: true}.EncodeBinary()
	for n := 0; n < len(full); n++ {
		var in HandleInput
		_ = in.Decode(full[:n])
	}
}

// TestHandleBinaryOutputs round-trips the three binary outputs and pins
// their layouts.
func TestHandleBinaryOutputs(t *testing.T) {
	c := HandleCreated{Handle: "mrh1_" + strings.Repeat("b", 32), Generation: 1, IdleTTLMS: 2, MaxAgeMS: 3, CreatedMS: 4}
	cb := c.EncodeBinary()
	if want := "0000000000000001" + "0000000000000002" + "0000000000000003" + "0000000000000004" + "25" + hex.EncodeToString([]byte(c.Handle)); hex.EncodeToString(cb) != want {
		t.Errorf("created layout %x", cb)
	}
	var c2 HandleCreated
	if err := c2.DecodeBinary(cb); err != nil || c2 != c {
		t.Errorf("created round trip %+v %v", c2, err)
	}
	for _, bad := range [][]byte{nil, cb[:32], cb[:len(cb)-1], append(bytes.Clone(cb), 0)} {
		if err := c2.DecodeBinary(bad); err == nil {
			t.Errorf("created DecodeBinary(%x): no error", bad)
		}
	}

	for _, v := range []HandleValue{{Value: []byte("hello"), Generation: 7, CreatedMS: 8, IdleTTLMS: 9, MaxAgeMS: 10}, {Value: []byte{}, Generation: 1}} {
		vb := v.EncodeBinary()
		if len(vb) != HandleValueAt+len(v.Value) || binary.BigEndian.Uint16(vb) != HandleValueAt || binary.BigEndian.Uint64(vb[10:]) != uint64(v.CreatedMS) ||
			!bytes.Equal(vb[34:HandleValueAt], make([]byte, HandleValueAt-34)) || !bytes.Equal(vb[HandleValueAt:], v.Value) {
			t.Errorf("value layout %x", vb)
		}
		var v2 HandleValue
		if err := v2.DecodeBinary(vb); err != nil || !reflect.DeepEqual(v2, v) {
			t.Errorf("value round trip %+v %v", v2, err)
		}
	}
	// value_at is read, not assumed: 34 (no padding) decodes; one inside
	// the fixed part or past the end does not.
	tight := append([]byte{0, 34}, make([]byte, 32)...)
	var v2 HandleValue
	if err := v2.DecodeBinary(append(tight, 'x')); err != nil || string(v2.Value) != "x" {
		t.Errorf("value_at 34: %+v %v", v2, err)
	}
	for _, bad := range [][]byte{append([]byte{0, 33}, tight[2:]...), append([]byte{0, 36}, tight[2:]...)} {
		if err := v2.DecodeBinary(bad); err == nil {
			t.Errorf("value DecodeBinary(value_at %d of %d bytes): no error", bad[1], len(bad))
		}
	}
	if err := v2.DecodeBinary(make([]byte, 33)); err == nil {
		t.Error("value DecodeBinary of 33 bytes: no error")
	}

	g := HandleGeneration{Generation: 42}
	gb := g.EncodeBinary()
	var g2 HandleGeneration
	if hex.EncodeToString(gb) != "000000000000002a" || g2.DecodeBinary(gb) != nil || g2 != g {
		t.Errorf("generation %x %+v", gb, g2)
	}
	if err := g2.DecodeBinary(gb[:7]); err == nil {
		t.Error("generation DecodeBinary of 7 bytes: no error")
	}
}

// FuzzHandleBinaryInput: no input panics the decoder, and what decodes
// encodes back to the same bytes.
func FuzzHandleBinaryInput(f *testing.F) {
	f.Add(HandleInput{Handle: "hh", Principal: "al", PrincipalSet: true, Value: []byte("v"), ValueSet: true}.EncodeBinary())
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var in HandleInput
		if in.DecodeBinary(b) != nil {
			return
		}
		if again := in.EncodeBinary(); !bytes.Equal(again, b) && b[1]&^handleFlagsKnown == 0 {
			// Integers whose flag is clear are ignored: compare with them zeroed.
			z := bytes.Clone(b)
			for i := 0; i < 4; i++ {
				if z[1]&(1<<i) == 0 {
					copy(z[2+8*i:], make([]byte, 8))
				}
			}
			if !bytes.Equal(again, z) {
				t.Errorf("re-encoded %x, want %x", again, z)
			}
		}
	})
}
