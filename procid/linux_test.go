package procid

import (
	"errors"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// oddComms are process names that trip naive /proc/<pid>/stat parsers.
var oddComms = []string{"a b", "x) (y", ")", "(", "", "((", "))", "a) S 1 2 3", "tab\there", "new\nline", "npm exec ./tiny"}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    statInfo
		wantErr error
	}{
		{
			name: "plain",
			data: fakeProc{pid: 42, ppid: 7, comm: "bash", start: 98765}.statLine(),
			want: statInfo{pid: 42, comm: "bash", state: 'S', ppid: 7, start: 98765},
		},
		{
			name: "max values",
			data: fakeProc{pid: 4194304, ppid: 4194303, comm: "x", state: 'R', start: 18446744073709551615}.statLine(),
			want: statInfo{pid: 4194304, comm: "x", state: 'R', ppid: 4194303, start: 18446744073709551615},
		},
		{
			name: "zombie with no trailing newline",
			data: "9 (z) Z 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 55",
			want: statInfo{pid: 9, comm: "z", state: 'Z', ppid: 1, start: 55},
		},
		{name: "empty", data: "", wantErr: ErrMalformed},
		{name: "no parens", data: "1 init S 0", wantErr: ErrMalformed},
		{name: "close before open", data: "1 )init( S 0", wantErr: ErrMalformed},
		{name: "no pid", data: "(init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5", wantErr: ErrMalformed},
		{name: "pid zero", data: "0 (init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5", wantErr: ErrMalformed},
		{name: "too few fields", data: "1 (init) S 0 0 0", wantErr: ErrMalformed},
		{name: "long state", data: "1 (init) SS 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5", wantErr: ErrMalformed},
		{name: "bad ppid", data: "1 (init) S -4 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5", wantErr: ErrMalformed},
		{name: "bad starttime", data: "1 (init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 -5", wantErr: ErrMalformed},
		{name: "starttime overflow", data: "1 (init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 18446744073709551616", wantErr: ErrMalformed},
	}
	for _, comm := range oddComms {
		tests = append(tests, struct {
			name    string
			data    string
			want    statInfo
			wantErr error
		}{
			name: "comm " + comm,
			data: fakeProc{pid: 1234, ppid: 1, comm: comm, start: 5}.statLine(),
			want: statInfo{pid: 1234, comm: comm, state: 'S', ppid: 1, start: 5},
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.data))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("parseStat(%q) error = %v, want %v", tt.data, err, tt.wantErr)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("parseStat(%q) mismatch %s", tt.data, d)
			}
		})
	}
}

func FuzzParseStat(f *testing.F) {
	for _, comm := range oddComms {
		f.Add([]byte(fakeProc{pid: 1234, ppid: 1, comm: comm, start: 5}.statLine()))
	}
	f.Add([]byte(""))
	f.Add([]byte("1 (init) S 0"))
	f.Add([]byte(")("))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseStat(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("parseStat(%q) error %v does not wrap ErrMalformed", data, err)
			}
			return
		}
		if st.pid <= 0 || st.ppid < 0 {
			t.Fatalf("parseStat(%q) = %+v, want positive pid and non-negative ppid", data, st)
		}
	})
}

func TestParseBootID(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    string
		wantErr error
	}{
		{name: "kernel format", data: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n", want: testBoot},
		{name: "uppercase", data: testBootUUID, want: testBoot},
		{name: "empty", data: "", wantErr: ErrNoBootID},
		{name: "short", data: "0f1e2d3c-4b5a-6978-8796\n", wantErr: ErrNoBootID},
		{name: "not hex", data: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg\n", wantErr: ErrNoBootID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseBootID([]byte(tt.data))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("parseBootID(%q) error = %v, want %v", tt.data, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseBootID(%q) = %q, want %q", tt.data, got, tt.want)
			}
		})
	}
}

// TestProcess reads processes through one walk level's answers, as
// linuxBase.process does: stat parsing, cmdline splitting, start time.
func TestProcess(t *testing.T) {
	plain := fakeProc{pid: 100, ppid: 1, comm: "claude", start: 98765, cmdline: argv("claude", "--resume")}
	spaced := fakeProc{pid: 101, ppid: 100, comm: "a b", cmdline: argv("/opt/a b", "")}
	paren := fakeProc{pid: 102, ppid: 100, comm: "x) (y", cmdline: argv("x", "", "y")}
	closeParen := fakeProc{pid: 103, ppid: 100, comm: ")"}
	empty := fakeProc{pid: 104, ppid: 100, comm: ""}
	// Observed for npx with npm 11.19.1, node 20.20.2 on Linux 6.18.
	titled := fakeProc{pid: 105, ppid: 100, comm: "npm exec ./tiny", cmdline: "npm exec ./tinypkg" + string(make([]byte, 17))}
	want := func(p fakeProc, args ...string) Process {
		return Process{PID: p.pid, PPID: p.ppid, Name: p.comm, Args: args, StartTime: p.startTime()}
	}
	base := linuxBase{boot: testBoot, ns: testNS}
	ok := func(s string) hostfuncs.InspectResult { return hostfuncs.InspectResult{Data: []byte(s)} }
	tests := []struct {
		name    string
		pid     int
		stat    hostfuncs.InspectResult
		cmdline hostfuncs.InspectResult
		want    Process
		wantErr error
	}{
		{name: "plain", pid: 100, stat: ok(plain.statLine()), cmdline: ok(plain.cmdline), want: want(plain, "claude", "--resume")},
		{name: "space in name, empty last arg dropped", pid: 101, stat: ok(spaced.statLine()), cmdline: ok(spaced.cmdline), want: want(spaced, "/opt/a b")},
		{name: "parens in name, empty inner arg kept", pid: 102, stat: ok(paren.statLine()), cmdline: ok(paren.cmdline), want: want(paren, "x", "", "y")},
		{name: "name is a paren, no cmdline", pid: 103, stat: ok(closeParen.statLine()), cmdline: ok(""), want: want(closeParen)},
		{name: "empty name", pid: 104, stat: ok(empty.statLine()), cmdline: ok(""), want: want(empty)},
		{name: "npm exec title", pid: 105, stat: ok(titled.statLine()), cmdline: ok(titled.cmdline), want: want(titled, "npm exec ./tinypkg")},
		{name: "cmdline unreadable", pid: 100, stat: ok(plain.statLine()), cmdline: errResult(hostfuncs.CodePermission), want: want(plain)},
		{name: "cmdline gone", pid: 100, stat: ok(plain.statLine()), cmdline: errResult(hostfuncs.CodeNotFound), wantErr: ErrNotFound},
		{name: "absent", pid: 999, stat: errResult(hostfuncs.CodeNotFound), wantErr: ErrNotFound},
		{name: "stat refused", pid: 100, stat: errResult(hostfuncs.CodePermission), wantErr: ErrPermission},
		{name: "stat io", pid: 100, stat: errResult(hostfuncs.CodeIO), wantErr: ErrNoAnswer},
		{name: "stat of another pid", pid: 107, stat: ok(plain.statLine()), wantErr: ErrMalformed},
		{name: "stat garbage", pid: 100, stat: ok("garbage"), wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := base.process(tt.pid, tt.stat, &tt.cmdline, nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("process(%d) error = %v, want %v", tt.pid, err, tt.wantErr)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("process(%d) mismatch %s", tt.pid, d)
			}
		})
	}
}

// TestLiveness_Linux: alive, gone or unknown for each file's host, including
// the cases behind the fault suite's wrong resumes: a start time from another
// PID namespace (faults 10b and 11d) and a host hidden by hidepid (fault 12)
// are unknown, never gone.
func TestLiveness_Linux(t *testing.T) {
	live := fakeProc{pid: 100, ppid: 1, comm: "claude", start: 98765}
	zombie := fakeProc{pid: 101, ppid: 100, comm: "gone", state: 'Z', start: 5}
	dead := fakeProc{pid: 102, ppid: 100, comm: "gone", state: 'X', start: 6}
	here := func(ticks string) string { return ticks + "." + testBoot + "." + testNS }
	tests := []struct {
		name      string
		pid       int
		startTime string
		kill0     string // code kill0 answers; "ok" is success; "" leaves the default (not_found)
		want      string
	}{
		{name: "same instance", pid: 100, startTime: here("98765"), want: hostfuncs.HostAlive},
		{name: "pid reused", pid: 100, startTime: here("98764"), want: hostfuncs.HostGone},
		{name: "previous boot", pid: 100, startTime: "98765.00000000000000000000000000000000", want: hostfuncs.HostGone},
		{name: "previous boot, same namespace", pid: 100, startTime: "98765.00000000000000000000000000000000." + testNS, want: hostfuncs.HostGone},
		{name: "malformed", pid: 100, startTime: "98765", want: hostfuncs.HostGone},
		{name: "macOS format", pid: 100, startTime: "1700000000", want: hostfuncs.HostGone},
		{name: "zombie", pid: 101, startTime: here("5"), want: hostfuncs.HostGone},
		{name: "dead", pid: 102, startTime: here("6"), want: hostfuncs.HostGone},
		{name: "absent", pid: 999, startTime: here("98765"), want: hostfuncs.HostGone},
		{name: "another PID namespace", pid: 100, startTime: "98765." + testBoot + ".4026532000", want: hostfuncs.HostUnknown},
		{name: "another PID namespace, absent pid", pid: 999, startTime: "98765." + testBoot + ".4026532000", want: hostfuncs.HostUnknown},
		{name: "hidden by hidepid", pid: 998, startTime: here("98765"), kill0: hostfuncs.CodePermission, want: hostfuncs.HostUnknown},
		{name: "stat missing but kill succeeds", pid: 997, startTime: here("98765"), kill0: "ok", want: hostfuncs.HostUnknown},
		{name: "stat missing, kill unsupported", pid: 996, startTime: here("98765"), kill0: hostfuncs.CodeUnsupported, want: hostfuncs.HostUnknown},
		{name: "same instance, same image", pid: 100, startTime: here("98765") + "." + fixtureExe, want: hostfuncs.HostAlive},
		// The host exec'd into another program: same pid and start ticks,
		// another image. Its files belong to a host that is gone.
		{name: "same start, another image (exec)", pid: 100, startTime: here("98765") + ".2049x7", want: hostfuncs.HostGone},
		{name: "pid reused, same image", pid: 100, startTime: here("98764") + "." + fixtureExe, want: hostfuncs.HostGone},
		{name: "another PID namespace, with image", pid: 100, startTime: "98765." + testBoot + ".4026532000." + fixtureExe, want: hostfuncs.HostUnknown},
		{name: "image unreadable", pid: 103, startTime: here("98765") + "." + fixtureExe, want: hostfuncs.HostUnknown},
	}
	sys := newSystem(300).put(live, zombie, dead, fakeProc{pid: 103, ppid: 1, comm: "other", start: 98765})
	sys.answers["exe 103"] = errResult(hostfuncs.CodePermission)
	var refs []HostRef
	for _, tt := range tests {
		refs = append(refs, HostRef{PID: tt.pid, StartTime: tt.startTime})
		switch tt.kill0 {
		case "":
		case "ok":
			sys.answers["kill0 "+itoa(tt.pid)] = hostfuncs.InspectResult{}
		default:
			sys.answers["kill0 "+itoa(tt.pid)] = errResult(tt.kill0)
		}
	}
	sys.answers["kill0 100"] = hostfuncs.InspectResult{}
	got := Liveness(linuxFacts(300), sys.inspect, refs)
	for i, tt := range tests {
		if got[i] != tt.want {
			t.Errorf("%s: Liveness(%d, %q) = %s, want %s", tt.name, tt.pid, tt.startTime, got[i], tt.want)
		}
	}
	if sys.calls != 1 {
		t.Errorf("Liveness made %d calls, want 1", sys.calls)
	}

	// Everything unknown: a foreign /proc, no boot ID, a host function
	// without an answer, a wrong number of results, another system.
	for name, change := range map[string]func(s *system, f *hostfuncs.Facts){
		"foreign /proc":  func(s *system, f *hostfuncs.Facts) { s.links[procSelf] = "1" },
		"no boot id":     func(s *system, f *hostfuncs.Facts) { delete(s.files, procBootID) },
		"no answer":      func(s *system, f *hostfuncs.Facts) { s.fail = true },
		"short answer":   func(s *system, f *hostfuncs.Facts) { s.short = true },
		"other system":   func(s *system, f *hostfuncs.Facts) { f.OS = "freebsd" },
		"facts lack pid": func(s *system, f *hostfuncs.Facts) { f.PID = 0 },
	} {
		sys := newSystem(300).put(live)
		f := linuxFacts(300)
		change(sys, &f)
		got := Liveness(f, sys.inspect, []HostRef{{PID: 100, StartTime: here("98765")}, {PID: 999, StartTime: here("1")}})
		if got[0] != hostfuncs.HostUnknown || got[1] != hostfuncs.HostUnknown {
			t.Errorf("%s: Liveness = %v, want all unknown", name, got)
		}
	}
}

// TestLiveness_Batches: 70 files take four calls of at most 64 operations (20 files each).
func TestLiveness_Batches(t *testing.T) {
	sys := newSystem(300)
	refs := make([]HostRef, 70)
	for i := range refs {
		refs[i] = HostRef{PID: 1000 + i, StartTime: "1." + testBoot + "." + testNS}
	}
	got := Liveness(linuxFacts(300), func(ops []hostfuncs.InspectOp) ([]hostfuncs.InspectResult, error) {
		if len(ops) > hostfuncs.MaxInspectOps {
			t.Fatalf("%d operations in one call", len(ops))
		}
		return sys.inspect(ops)
	}, refs)
	for i, s := range got {
		if s != hostfuncs.HostGone {
			t.Fatalf("file %d: %s, want gone", i, s)
		}
	}
	if sys.calls != 4 {
		t.Errorf("%d calls, want 4", sys.calls)
	}
}
