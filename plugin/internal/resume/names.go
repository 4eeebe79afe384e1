package resume

// The token rule and the names of the token and lock files (spec 000,
// Token File Naming Strategy, Token File Corrupted).

import (
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// MaxTokenBytes is the largest token the store accepts, in bytes.
const MaxTokenBytes = 4096

// FilePrefix starts every token file name: token-<parent_pid>-<parent_start_time>
// (spec 000, Token File Naming Strategy), followed by -<instance> when the
// host tells server instances apart.
const FilePrefix = "token-"

// LockPrefix starts the name of the lock file that the instance owning a
// token file holds for its lifetime: lock-<parent_pid>-<parent_start_time>[-<instance>].
const LockPrefix = "lock-"

// CheckToken returns "" if b is a valid token (1–MaxTokenBytes bytes, each
// 0x21–0x7E), else a description of the first problem that never quotes the
// token itself. Anything else found in a token file is corrupt (spec 000,
// Token File Corrupted).
func CheckToken(b []byte) string {
	switch {
	case len(b) == 0:
		return "token is empty"
	case len(b) > MaxTokenBytes:
		return "token is longer than " + strconv.Itoa(MaxTokenBytes) + " bytes"
	}
	for i, c := range b {
		if c < 0x21 || c > 0x7e {
			return "token has byte 0x" + hex.EncodeToString([]byte{c}) + " at offset " + strconv.Itoa(i) + "; only visible ASCII (0x21-0x7E) is allowed"
		}
	}
	return ""
}

// InstanceSuffix returns the file-name suffix for an instance key material
// (KeyMaterial): "" for "", else the first 16 hex digits of its SHA-256
// (the key may hold a server's arguments and environment, so only a digest
// reaches the file system), computed by the host (Digest), whose failure
// is the error.
func InstanceSuffix(call Caller, instance string) (string, *hostfuncs.Error) {
	if instance == "" {
		return "", nil
	}
	sums, err := Digest(call, []byte(instance))
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sums[0][:8]), nil
}

// FileName returns token-<pid>-<startTime> (spec 000, Token File Naming
// Strategy), with -<suffix> appended when suffix (from InstanceSuffix) is set.
func FileName(pid int, startTime, suffix string) string {
	return name(FilePrefix, pid, startTime, suffix)
}

func lockName(pid int, startTime, suffix string) string {
	return name(LockPrefix, pid, startTime, suffix)
}

func name(prefix string, pid int, startTime, suffix string) string {
	n := prefix + strconv.Itoa(pid) + "-" + startTime
	if suffix != "" {
		n += "-" + suffix
	}
	return n
}

// Name is a token or lock file name taken apart.
type Name struct {
	PID       int
	StartTime string
	Instance  string // 16 hex digits, or "" when the host did not tell instances apart
}

// ParseName splits a name made by FileName (prefix FilePrefix) or for a lock
// (LockPrefix) back into its parts; ok is false for any other name.
func ParseName(prefix, name string) (Name, bool) {
	rest, found := strings.CutPrefix(name, prefix)
	if !found {
		return Name{}, false
	}
	p, rest, found := strings.Cut(rest, "-")
	if !found {
		return Name{}, false
	}
	start, inst, _ := strings.Cut(rest, "-")
	if !validStartTime(start) || (inst != "" || strings.HasSuffix(rest, "-")) && !isHex16(inst) {
		return Name{}, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 1 || strconv.Itoa(pid) != p {
		return Name{}, false
	}
	return Name{PID: pid, StartTime: start, Instance: inst}, true
}

// MarkerPrefix starts the name of an ambiguity marker:
// ambiguous-<InstanceSuffix of the key material>. It has no host part, so
// it outlives both instances and their host (plugin/README.md, "Files").
const MarkerPrefix = "ambiguous-"

// ParseMarker returns the 16 hex digits of an ambiguity marker's name
// (MarkerPrefix), and false for any other name.
func ParseMarker(name string) (string, bool) {
	hex16, ok := strings.CutPrefix(name, MarkerPrefix)
	return hex16, ok && isHex16(hex16)
}

func isHex16(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// MaxStartTimeLen is the longest start time a file name may carry, in
// bytes: the Linux form <ticks>.<boot_id>.<pid_ns>.<exe_dev>x<exe_ino> is
// at most 20+1+32+1+20+1+20+1+20 = 116 bytes (policy's package
// documentation, "Start time").
const MaxStartTimeLen = 128

// validStartTime reports whether s may be the start time in a file name:
// 1-MaxStartTimeLen bytes of [a-z0-9.] (the forms of policy's start times,
// and those written before).
func validStartTime(s string) bool {
	if len(s) == 0 || len(s) > MaxStartTimeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.') {
			return false
		}
	}
	return true
}
