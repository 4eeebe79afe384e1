package procid

import (
	"bytes"
	"encoding/binary"
)

// DecodeProcArgs2 decodes a whole kern.procargs2 record (macOS, the
// procargs inspect operation): a little-endian int32 argc, the executable
// path NUL-terminated, NUL padding, argc NUL-terminated arguments, then the
// environment, one NUL-terminated "NAME=value" string each, up to an empty
// string or the end of the record (what follows the empty string, the
// kernel's own "apple" strings, is not the environment). Unlike the walk's
// decoder it keeps every argument, empty ones included, since the instance
// key of plugin/internal/resume must be exact. Errors wrap ErrMalformed: a
// record too short, a negative or impossible argc, no executable path, or
// fewer than argc arguments.
func DecodeProcArgs2(b []byte) (args, env []string, err error) {
	if len(b) < 4 {
		return nil, nil, wrap("procargs2 is "+itoa(len(b))+" bytes", ErrMalformed)
	}
	argc := int32(binary.LittleEndian.Uint32(b))
	if argc < 0 || int(argc) > len(b) {
		return nil, nil, wrap("procargs2 has argc "+itoa(int(argc)), ErrMalformed)
	}
	rest := b[4:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return nil, nil, wrap("procargs2 has no executable path", ErrMalformed)
	}
	rest = bytes.TrimLeft(rest[i:], "\x00")
	args = make([]string, 0, argc)
	for len(args) < int(argc) {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return nil, nil, wrap("procargs2 ends after "+itoa(len(args))+" of "+itoa(int(argc))+" arguments", ErrMalformed)
		}
		args = append(args, string(rest[:i]))
		rest = rest[i+1:]
	}
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, 0)
		if i == 0 {
			break
		}
		if i < 0 {
			i = len(rest)
		}
		env = append(env, string(rest[:i]))
		rest = rest[min(i+1, len(rest)):]
	}
	return args, env, nil
}
