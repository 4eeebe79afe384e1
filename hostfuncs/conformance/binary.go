package conformance

// The binary form of handle_create, handle_get and handle_put in cases
// (README.md, "Handle store cases", "Binary inputs"): input_hex,
// output_hex and output_prefix_hex.

import (
	"bytes"
	"encoding/hex"
	"fmt"
)

// HexInput returns the bytes of a call's input_hex h after replacing each
// saved variable "$<var>" (vars, as for ReplaceVars) by the lowercase hex
// of its text (a string's UTF-8 bytes, a number's JSON), longer names
// first. Error: h is not hex after the replacement.
func HexInput(h string, vars map[string]any) ([]byte, error) {
	hv := make(map[string]any, len(vars))
	for n, v := range vars {
		hv[n] = hex.EncodeToString([]byte(textOf(v)))
	}
	b, err := hex.DecodeString(ReplaceVars(h, hv).(string))
	if err != nil {
		return nil, fmt.Errorf("input_hex: %v", err)
	}
	return b, nil
}

// HexOutput checks a successful binary output out against a want's
// output_hex (exact: the output is exactly these bytes) or
// output_prefix_hex (prefix: it starts with them); give the one the want
// has, nil for the other. It returns "" when out matches, else what
// differs; an error when the want's hex is not hex.
func HexOutput(out []byte, exact, prefix *string) (string, error) {
	h := exact
	if h == nil {
		h = prefix
	}
	if h == nil {
		return "", fmt.Errorf("neither output_hex nor output_prefix_hex")
	}
	want, err := hex.DecodeString(*h)
	if err != nil {
		return "", fmt.Errorf("want: %v", err)
	}
	got := out
	if exact == nil && len(got) > len(want) {
		got = got[:len(want)]
	}
	if bytes.Equal(got, want) {
		return "", nil
	}
	if exact == nil {
		return fmt.Sprintf("output %x, want it to start with %x", out, want), nil
	}
	return fmt.Sprintf("output %x, want %x", out, want), nil
}
