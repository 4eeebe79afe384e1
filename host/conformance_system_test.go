package host_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance"
)

// pinnedSystem is the conformance runner's host functions
// (hostfuncs/conformance/README.md, "Running a case", step 2): the real
// primitives.Funcs for the state directory, the lock and the log, and the
// case's pinned system for everything that describes the machine.
// mcp_resume_facts answers the case's facts as is; mcp_resume_inspect
// answers the typed /proc operations from the fixture tree root/proc (only
// when the pinned facts.os is "linux", else unsupported) and the others
// from the case's answers or the conformance defaults, never from the real
// system; a function named in no_answer is not run at all and answers the
// 8 bytes "not json". This is test code: production Funcs has no pinned mode.
type pinnedSystem struct {
	*primitives.Funcs
	facts    json.RawMessage
	linux    bool   // facts.os is "linux"
	proc     string // the fixture tree standing in for /proc
	answers  map[string]json.RawMessage
	noAnswer []string
}

func newPinnedSystem(funcs *primitives.Funcs, sys system, proc string) *pinnedSystem {
	var facts struct {
		OS string `json:"os"`
	}
	_ = json.Unmarshal(sys.Facts, &facts)
	return &pinnedSystem{Funcs: funcs, facts: sys.Facts, linux: facts.OS == "linux", proc: proc, answers: sys.Answers, noAnswer: sys.NoAnswer}
}

// Call implements primitives.Handler.
func (p *pinnedSystem) Call(fn string, req []byte) []byte {
	switch {
	case slices.Contains(p.noAnswer, fn):
		return []byte("not json")
	case fn == hostfuncs.FnFacts:
		return p.facts
	case fn == hostfuncs.FnInspect:
		var r struct {
			Ops []json.RawMessage `json:"ops"`
		}
		if err := json.Unmarshal(req, &r); err != nil || len(r.Ops) == 0 || len(r.Ops) > hostfuncs.MaxInspectOps {
			return pinnedError(hostfuncs.CodeInvalidRequest, "mcp_resume_inspect: not 1 to 64 operations")
		}
		results := make([]json.RawMessage, len(r.Ops))
		for i, raw := range r.Ops {
			results[i] = p.inspect(raw)
		}
		out, _ := json.Marshal(map[string]any{"results": results})
		return out
	}
	return p.Funcs.Call(fn, req)
}

// The conformance defaults of the answered operations: kill0 not_found,
// fstat a terminal, exe one program image for every pid, the rest
// unsupported.
const (
	conformanceExe        = `{"dev":"2049","ino":"1234567"}`
	conformanceFstat      = `{"type":"char"}`
	conformanceKill0      = `{"error":{"code":"not_found","message":"no such process (conformance default)"}}`
	conformanceUnanswered = `{"error":{"code":"unsupported","message":"not answered here (conformance default)"}}`
)

var digits = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)

func validPID(pid string, self bool) bool {
	n, err := strconv.ParseInt(pid, 10, 64)
	return self && pid == hostfuncs.PIDSelf || digits.MatchString(pid) && err == nil && n <= math.MaxInt32
}

// inspect answers one operation from the pinned system.
func (p *pinnedSystem) inspect(raw json.RawMessage) json.RawMessage {
	var op struct {
		Op      string   `json:"op"`
		PID     *string  `json:"pid"`
		FD      *int64   `json:"fd"`
		Targets []string `json:"targets"`
		NS      *string  `json:"ns"`
		Table   *string  `json:"table"`
	}
	if json.Unmarshal(raw, &op) != nil || raw[0] != '{' {
		return pinnedError(hostfuncs.CodeInvalidRequest, "operation is not an object")
	}
	// Validated as the real host validates: a pid is digits without a
	// leading zero within 1..2147483647 ("self" for the /proc operations),
	// an fd 0..2147483647; whatever answers holds.
	fx, isProc := hostfuncs.ProcOpOf(op.Op)
	needPID := isProc && strings.Contains(fx.Path, "<P>") || slices.Contains([]string{hostfuncs.OpKill0, hostfuncs.OpExe, hostfuncs.OpSysctl, hostfuncs.OpProcargs, hostfuncs.OpPs}, op.Op)
	needFD := isProc && strings.Contains(fx.Path, "<N>") || op.Op == hostfuncs.OpFstat || op.Op == hostfuncs.OpPeer
	if needPID && (op.PID == nil || !validPID(*op.PID, isProc)) || needFD && (op.FD == nil || *op.FD < 0 || *op.FD > math.MaxInt32) {
		return pinnedError(hostfuncs.CodeInvalidRequest, `bad "pid" or "fd"`)
	}
	if strings.Contains(fx.Path, "<NS>") && (op.NS == nil || !slices.Contains(hostfuncs.Namespaces, *op.NS)) ||
		strings.Contains(fx.Path, "<T>") && (op.Table == nil || !slices.Contains(hostfuncs.NetTables, *op.Table)) {
		return pinnedError(hostfuncs.CodeInvalidRequest, `bad "ns" or "table"`)
	}
	key := op.Op + " "
	switch {
	case needPID:
		key += *op.PID
	case needFD:
		key += strconv.FormatInt(*op.FD, 10)
	}
	switch {
	case isProc:
	case p.answers[key] != nil:
		return p.answers[key]
	case op.Op == hostfuncs.OpKill0:
		return json.RawMessage(conformanceKill0)
	case op.Op == hostfuncs.OpFstat:
		return json.RawMessage(conformanceFstat)
	case op.Op == hostfuncs.OpExe:
		return json.RawMessage(conformanceExe)
	case slices.Contains([]string{hostfuncs.OpPeer, hostfuncs.OpSysctl, hostfuncs.OpProcargs, hostfuncs.OpPs}, op.Op):
		return json.RawMessage(conformanceUnanswered)
	default:
		return pinnedError(hostfuncs.CodeInvalidRequest, "unknown operation "+strconv.Quote(op.Op))
	}
	path := fx.Path
	if needPID {
		path = strings.Replace(path, "<P>", *op.PID, 1)
	}
	if needFD {
		path = strings.Replace(path, "<N>", strconv.FormatInt(*op.FD, 10), 1)
	}
	if op.NS != nil {
		path = strings.Replace(path, "<NS>", *op.NS, 1)
	}
	if op.Table != nil {
		path = strings.Replace(path, "<T>", *op.Table, 1)
	}
	if !p.linux {
		return pinnedError(hostfuncs.CodeUnsupported, "no /proc on the pinned system")
	}
	path = filepath.Join(p.proc, path)
	var result any
	var err error
	switch {
	case op.Op == hostfuncs.OpFDs:
		result, err = fixtureFDs(path, op.Targets)
	case fx.Link:
		var target string
		target, err = os.Readlink(path)
		result = map[string]string{"target": target}
	default:
		var data []byte
		data, err = readNoFollow(path, fx.Max)
		result = map[string][]byte{"data": data}
	}
	if err != nil {
		return pinnedError(fixtureCode(err), err.Error())
	}
	out, _ := json.Marshal(result)
	return out
}

// fixtureFDs lists a fixture fd directory as the fds operation does: each
// fd's target and the octal flags of its fdinfo file (-1 without one),
// sorted by fd, only those whose target is in targets when given; an entry
// gone meanwhile is skipped, any other readlink failure fails the listing.
func fixtureFDs(dir string, targets []string) (any, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := []hostfuncs.FD{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // closed during the listing
		}
		if err != nil { // a link that cannot be read fails the op, as in primitives
			return nil, err
		}
		if targets != nil && !slices.Contains(targets, target) {
			continue
		}
		flags := -1
		info, _ := readNoFollow(filepath.Join(dir+"info", e.Name()), hostfuncs.MaxProcRead)
		for line := range strings.Lines(string(info)) {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				if f, err := strconv.ParseInt(strings.TrimSpace(v), 8, 32); err == nil {
					flags = int(f)
				}
			}
		}
		out = append(out, hostfuncs.FD{FD: n, Target: target, Flags: flags})
	}
	slices.SortFunc(out, func(a, b hostfuncs.FD) int { return a.FD - b.FD })
	return map[string]any{"fds": out}, nil
}

func readNoFollow(path string, max int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(max)))
}

// fixtureCode maps a fixture read's error as the contract does.
func fixtureCode(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return hostfuncs.CodeNotFound
	case errors.Is(err, fs.ErrPermission):
		return hostfuncs.CodePermission
	case errors.Is(err, syscall.ELOOP):
		return hostfuncs.CodeUnsafe
	case errors.Is(err, syscall.ENOTDIR):
		return hostfuncs.CodeNotDir
	}
	return hostfuncs.CodeIO
}

func pinnedError(code, msg string) json.RawMessage {
	out, _ := json.Marshal(hostfuncs.Empty{Error: &hostfuncs.Error{Code: code, Message: msg}})
	return out
}

// checkHostCall checks a host function's response against a host_call's
// want (hostfuncs/conformance/README.md, step 6): ok (no error),
// error_code, response_subset (no error and every key equal, recursively
// for objects, arrays exactly) or result_codes (inspect: no top-level error
// and one result per entry, an error with that code or, for null, a
// success). Padding after the JSON is allowed.
func checkHostCall(t *testing.T, what string, w want, resp []byte) {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal(resp, &got); err != nil {
		t.Errorf("%s: response %q is not a JSON object: %v", what, truncate(resp), err)
		return
	}
	code := errorCode(got)
	if msg := conformance.Excludes(w.MessageExcludes, string(resp)); code != "" && msg != "" {
		t.Errorf("%s: message_excludes: %s", what, msg)
	}
	switch {
	case w.ErrorCode != "":
		if code != w.ErrorCode {
			t.Errorf("%s: response %s, want error code %q", what, truncate(resp), w.ErrorCode)
		}
	case w.OK != nil:
		if !*w.OK {
			t.Fatalf("%s: bad want: ok must be true", what)
		}
		if code != "" {
			t.Errorf("%s: response %s, want no error", what, truncate(resp))
		}
	case w.ResponseSubset != nil:
		if code != "" || !conformance.Subset(conformance.DecodeJSON(w.ResponseSubset), got) {
			t.Errorf("%s: response %s, want the subset %s", what, resp, w.ResponseSubset)
		}
	case w.ResultCodes != nil:
		var codes []*string
		if err := json.Unmarshal(w.ResultCodes, &codes); err != nil {
			t.Fatalf("%s: bad want.result_codes: %v", what, err)
		}
		results, _ := got["results"].([]any)
		ok := code == "" && len(results) == len(codes)
		for i := 0; ok && i < len(codes); i++ {
			r, isObject := results[i].(map[string]any)
			rc := errorCode(r)
			ok = isObject && (codes[i] == nil && rc == "" || codes[i] != nil && rc == *codes[i])
		}
		if !ok {
			t.Errorf("%s: response %s, want result codes %s", what, resp, w.ResultCodes)
		}
	default:
		t.Fatalf("%s: unknown host_call want (ok, error_code, response_subset or result_codes)", what)
	}
}

// checkBinaryHostCall checks a binary host function's response
// (mcp_resume_crypto) against its want: response_hex (exactly these
// bytes), response_prefix_hex (starting with them) or error_code (the JSON
// error object).
func checkBinaryHostCall(t *testing.T, what string, w want, resp []byte) {
	t.Helper()
	switch {
	case w.ResponseHex != nil || w.ResponsePrefixHex != nil:
		exact := w.ResponseHex != nil
		wantHex := w.ResponsePrefixHex
		if exact {
			wantHex = w.ResponseHex
		}
		wantBytes, err := hex.DecodeString(*wantHex)
		if err != nil {
			t.Fatalf("%s: bad want hex: %v", what, err)
		}
		if exact && !bytes.Equal(resp, wantBytes) || !exact && !bytes.HasPrefix(resp, wantBytes) {
			t.Errorf("%s: response %x, want %x (exact %v)", what, resp, wantBytes, exact)
		}
	case w.ErrorCode != "":
		var got map[string]any
		if len(resp) == 0 || resp[0] != '{' || json.Unmarshal(resp, &got) != nil || errorCode(got) != w.ErrorCode {
			t.Errorf("%s: response %q, want the JSON error %q", what, truncate(resp), w.ErrorCode)
		}
	default:
		t.Fatalf("%s: unknown binary host_call want (response_hex, response_prefix_hex or error_code)", what)
	}
}

// checkTook checks a host_call's duration against want's min_ms and max_ms.
func checkTook(t *testing.T, what string, w want, took time.Duration) {
	t.Helper()
	if ms := took.Milliseconds(); w.MinMS > 0 && ms < w.MinMS || w.MaxMS > 0 && ms > w.MaxMS {
		t.Errorf("%s: took %v, want %d..%d ms (0: unbounded)", what, took, w.MinMS, w.MaxMS)
	}
}

// errorCode is the code of a response's error, "" when it has none (absent
// or null), "(malformed)" when its error is not {"code": str, ...}.
func errorCode(resp map[string]any) string {
	e, present := resp["error"]
	if !present || e == nil {
		return ""
	}
	if m, ok := e.(map[string]any); ok {
		if code, ok := m["code"].(string); ok && code != "" {
			return code
		}
	}
	return "(malformed)"
}

// holdSocket binds the abstract Unix socket name in the form Node binds (a
// NUL, name and NULs up to the whole 108-byte sun_path: address length 110)
// with a plain socket of the runner, not the host functions, and holds it
// until the case ends (hostfuncs/conformance/README.md, hold_socket). It
// checks in /proc/net/unix that the kernel shows the padded name
// (@name@@@...), so the runner cannot bind another form by mistake.
func holdSocket(t *testing.T, name string) {
	t.Helper()
	if name == "" || len(name) > 107 || strings.IndexByte(name, 0) >= 0 {
		t.Fatalf("hold_socket: socket %q must be 1-107 bytes without NUL", name)
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("hold_socket: %v", err)
	}
	syscall.CloseOnExec(fd)
	t.Cleanup(func() { syscall.Close(fd) })
	padded := name + strings.Repeat("\x00", 107-len(name))
	// A leading '@' makes package syscall write a NUL and count exactly
	// these bytes (2 + 108 = 110).
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: "@" + padded}); err != nil {
		t.Fatalf("hold_socket %q: %v", name, err)
	}
	table, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatalf("hold_socket: %v", err)
	}
	shown := " @" + strings.ReplaceAll(padded, "\x00", "@") + "\n"
	if !strings.Contains(string(table), shown) {
		t.Fatalf("hold_socket: /proc/net/unix does not show the padded name %q", shown[1:len(shown)-1])
	}
}
