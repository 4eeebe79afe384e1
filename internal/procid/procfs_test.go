package procid

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func TestLinuxReader_Lookup(t *testing.T) {
	plain := fakeProc{pid: 100, ppid: 1, comm: "claude", start: 98765, cmdline: argv("claude", "--resume")}
	spaced := fakeProc{pid: 101, ppid: 100, comm: "a b", cmdline: argv("/opt/a b", "")}
	paren := fakeProc{pid: 102, ppid: 100, comm: "x) (y", cmdline: argv("x", "", "y")}
	closeParen := fakeProc{pid: 103, ppid: 100, comm: ")"}
	empty := fakeProc{pid: 104, ppid: 100, comm: ""}
	// Observed for npx with npm 11.19.1, node 20.20.2 on Linux 6.18.
	titled := fakeProc{pid: 105, ppid: 100, comm: "npm exec ./tiny", cmdline: "npm exec ./tinypkg" + string(make([]byte, 17))}
	mismatch := fakeProc{pid: 106, ppid: 100, comm: "m"}
	root := writeTree(t, false, plain, spaced, paren, closeParen, empty, titled, mismatch)
	// /proc/107/stat that describes pid 106.
	if err := os.MkdirAll(filepath.Join(root, "107"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "107", "stat"), []byte(mismatch.statLine()), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		root    string
		pid     int
		want    Process
		wantErr error
	}{
		{name: "plain", pid: 100, want: plain.want("claude", "--resume")},
		{name: "space in name, empty last arg dropped", pid: 101, want: spaced.want("/opt/a b")},
		{name: "parens in name, empty inner arg kept", pid: 102, want: paren.want("x", "", "y")},
		{name: "name is a paren, no cmdline", pid: 103, want: closeParen.want()},
		{name: "empty name", pid: 104, want: empty.want()},
		{name: "npm exec title", pid: 105, want: titled.want("npm exec ./tinypkg")},
		{name: "absent", pid: 999, wantErr: ErrNotFound},
		{name: "pid zero", pid: 0, wantErr: ErrNotFound},
		{name: "negative pid", pid: -1, wantErr: ErrNotFound},
		{name: "stat of another pid", pid: 107, wantErr: ErrMalformed},
		{name: "no boot id", root: writeTree(t, true, plain), pid: 100, wantErr: ErrNoBootID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &linuxReader{root: root}
			if tt.root != "" {
				r.root = tt.root
			}
			got, err := r.lookup(tt.pid)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("lookup(%d) error = %v, want %v", tt.pid, err, tt.wantErr)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("lookup(%d) mismatch %s", tt.pid, d)
			}
		})
	}
}

func TestLinuxReader_Alive(t *testing.T) {
	live := fakeProc{pid: 100, ppid: 1, comm: "claude", start: 98765}
	zombie := fakeProc{pid: 101, ppid: 100, comm: "gone", state: 'Z', start: 5}
	dead := fakeProc{pid: 102, ppid: 100, comm: "gone", state: 'X', start: 6}
	root := writeTree(t, false, live, zombie, dead)

	tests := []struct {
		name      string
		root      string
		pid       int
		startTime string
		want      bool
		wantErr   error
	}{
		{name: "same instance", pid: 100, startTime: "98765." + testBoot + "." + testNS, want: true},
		{name: "pid reused", pid: 100, startTime: "98764." + testBoot + "." + testNS},
		{name: "previous boot", pid: 100, startTime: "98765.00000000000000000000000000000000"},
		{name: "malformed", pid: 100, startTime: "98765"},
		{name: "empty", pid: 100, startTime: ""},
		{name: "macOS format", pid: 100, startTime: "1700000000.000042"},
		{name: "zombie", pid: 101, startTime: "5." + testBoot + "." + testNS},
		{name: "dead", pid: 102, startTime: "6." + testBoot + "." + testNS},
		{name: "absent", pid: 999, startTime: "98765." + testBoot + "." + testNS},
		{name: "pid zero", pid: 0, startTime: "98765." + testBoot + "." + testNS},
		{name: "no boot id", root: writeTree(t, true, live), pid: 100, startTime: "98765." + testBoot + "." + testNS, wantErr: ErrNoBootID},
		// A pid recorded in another PID namespace names nothing here: unknown, never "gone".
		{name: "another PID namespace", pid: 100, startTime: "98765." + testBoot + ".4026532000", wantErr: ErrNamespace},
		{name: "another PID namespace, absent pid", pid: 999, startTime: "98765." + testBoot + ".4026532000", wantErr: ErrNamespace},
		// /proc mounted hidepid hides pid 998, which exists: unknown, never "gone".
		{name: "hidden by hidepid", pid: 998, startTime: "98765." + testBoot + "." + testNS, wantErr: fs.ErrPermission},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &linuxReader{root: root, hidden: func(pid int) bool { return pid == 998 }}
			if tt.root != "" {
				r.root = tt.root
			}
			got, err := r.alive(tt.pid, tt.startTime)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("alive(%d, %q) error = %v, want %v", tt.pid, tt.startTime, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("alive(%d, %q) = %v, want %v", tt.pid, tt.startTime, got, tt.want)
			}
		})
	}
}

// TestLinuxReader_Hidden checks that a pid /proc hides (hidepid) but which
// exists is told apart from one that is gone: resolving through it fails
// with a permission error naming hidepid, not "exited during the walk".
func TestLinuxReader_Hidden(t *testing.T) {
	server := fakeProc{pid: 300, ppid: 200, comm: "server"}
	root := writeTree(t, false, server) // the host, pid 200, is not in the tree
	r := &linuxReader{root: root, hidden: func(pid int) bool { return pid == 200 }}
	_, err := resolve(r, 300, newLauncherSet(nil, ""))
	if !errors.Is(err, fs.ErrPermission) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrRace) {
		t.Fatalf("resolve() error = %v, want a permission error", err)
	}
	if want := "pid 200 exists but " + root + " hides it (mounted hidepid=1 or 2)"; !strings.Contains(err.Error(), want) {
		t.Errorf("resolve() error = %q, want it to contain %q", err, want)
	}
	r.hidden = func(int) bool { return false }
	if _, err := resolve(r, 300, newLauncherSet(nil, "")); !errors.Is(err, ErrRace) {
		t.Errorf("resolve() with the host gone: error = %v, want %v", err, ErrRace)
	}
}
