package procid

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

func procargs2(argc int, parts ...string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(argc))
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestDecodeProcArgs2(t *testing.T) {
	rec := procargs2(3, "/usr/bin/python3\x00\x00\x00\x00", "python3\x00", "/w/notes/server.py\x00", "\x00", "HOME=/u\x00", "PATH=/bin\x00", "\x00", "ptr_munge=\x00")
	args, env, err := DecodeProcArgs2(rec)
	if err != nil || !slices.Equal(args, []string{"python3", "/w/notes/server.py", ""}) || !slices.Equal(env, []string{"HOME=/u", "PATH=/bin"}) {
		t.Errorf("DecodeProcArgs2 = %q, %q, %v", args, env, err)
	}
	// No environment, and an environment that runs to the end unterminated.
	if args, env, err := DecodeProcArgs2(procargs2(1, "/bin/x\x00", "x\x00")); err != nil || !slices.Equal(args, []string{"x"}) || env != nil {
		t.Errorf("no env: %q, %q, %v", args, env, err)
	}
	if _, env, err := DecodeProcArgs2(procargs2(1, "/bin/x\x00", "x\x00", "A=1")); err != nil || !slices.Equal(env, []string{"A=1"}) {
		t.Errorf("unterminated env: %q, %v", env, err)
	}
	for _, bad := range [][]byte{nil, {1, 0}, procargs2(-1, "/x\x00"), procargs2(2, "/bin/x"), procargs2(2, "/bin/x\x00", "x\x00")} {
		if _, _, err := DecodeProcArgs2(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeProcArgs2(%q) = %v; want ErrMalformed", bad, err)
		}
	}
}
