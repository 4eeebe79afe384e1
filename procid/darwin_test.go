package procid

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// kinfoBytes builds a little-endian struct kinfo_proc as sysctl
// kern.proc.pid returns it on darwin/amd64 and darwin/arm64, with the given
// fields at the offsets checked against x/sys/unix in layout_darwin_test.go and
// every other byte 0xAA so that a wrong offset reads garbage.
func kinfoBytes(pid, ppid int32, comm string, stat int8, sec int64, usec int32) []byte {
	b := make([]byte, kinfoSize)
	for i := range b {
		b[i] = 0xAA
	}
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(sec))
	le.PutUint32(b[8:], uint32(usec))
	le.PutUint32(b[12:], 0) // Timeval padding.
	b[36] = byte(stat)
	le.PutUint32(b[40:], uint32(pid))
	c := b[243 : 243+17]
	for i := range c {
		c[i] = 0
	}
	copy(c, comm)
	le.PutUint32(b[560:], uint32(ppid))
	le.PutUint32(b[572:], 0xFFFFFFFF) // e_tdev NODEV: no terminal unless a test sets one.
	return b
}

func TestDecodeKinfo(t *testing.T) {
	tests := []struct {
		name      string
		data      []byte
		want      kinfo
		wantStart string
		wantErr   error
	}{
		{
			name:      "plain",
			data:      kinfoBytes(4242, 1, "Claude", 2, 1700000000, 42),
			want:      kinfo{pid: 4242, ppid: 1, comm: "Claude", stat: 2, tdev: -1, sec: 1700000000, usec: 42},
			wantStart: "1700000000",
		},
		{
			name:      "sixteen-byte comm, usec at its maximum",
			data:      kinfoBytes(77, 4242, "0123456789abcdef", 3, 1, 999999),
			want:      kinfo{pid: 77, ppid: 4242, comm: "0123456789abcdef", stat: 3, tdev: -1, sec: 1, usec: 999999},
			wantStart: "1",
		},
		{
			name:      "odd comm",
			data:      kinfoBytes(78, 77, "x) (y", 5, 1700000001, 0),
			want:      kinfo{pid: 78, ppid: 77, comm: "x) (y", stat: 5, tdev: -1, sec: 1700000001},
			wantStart: "1700000001",
		},
		{
			name:      "longer record",
			data:      append(kinfoBytes(79, 1, "sh", 2, 10, 10), 0, 0, 0, 0),
			want:      kinfo{pid: 79, ppid: 1, comm: "sh", stat: 2, tdev: -1, sec: 10, usec: 10},
			wantStart: "10",
		},
		{name: "empty", data: nil, wantErr: ErrMalformed},
		{name: "short", data: kinfoBytes(79, 1, "sh", 2, 10, 10)[:kinfoSize-1], wantErr: ErrMalformed},
		{name: "pid 0", data: kinfoBytes(0, 0, "kernel_task", 2, 10, 10), wantErr: ErrMalformed},
		{name: "negative pid", data: kinfoBytes(-3, 1, "x", 2, 10, 10), wantErr: ErrMalformed},
		{name: "negative ppid", data: kinfoBytes(3, -1, "x", 2, 10, 10), wantErr: ErrMalformed},
		{name: "empty comm", data: kinfoBytes(3, 1, "", 2, 10, 10), wantErr: ErrMalformed},
		{name: "zero start", data: kinfoBytes(3, 1, "x", 2, 0, 0), wantErr: ErrMalformed},
		{name: "usec too large", data: kinfoBytes(3, 1, "x", 2, 10, 1000000), wantErr: ErrMalformed},
		{name: "negative usec", data: kinfoBytes(3, 1, "x", 2, 10, -1), wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeKinfo(tt.data)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("decodeKinfo() error = %v, want %v", err, tt.wantErr)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("decodeKinfo() mismatch %s", d)
			}
			if err != nil {
				return
			}
			if got := got.process(nil).StartTime; got != tt.wantStart {
				t.Errorf("startTime() = %q, want %q", got, tt.wantStart)
			}
		})
	}
}

func TestKinfo_Process(t *testing.T) {
	k := kinfo{pid: 4242, ppid: 1, comm: "Claude", stat: 2, tdev: 0x10000003, sec: 1700000000, usec: 42}
	want := Process{PID: 4242, PPID: 1, Name: "Claude", Args: []string{"a"}, StartTime: "1700000000", tty: 0x10000003, ttyKnown: true}
	if d := diff(want, k.process([]string{"a"})); d != "" {
		t.Errorf("process() mismatch %s", d)
	}
}

// procArgs builds a kern.procargs2 record: argc, path, padding, args, env.
func procArgs(argc int32, path string, pad int, args []string, env []string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(argc))
	b = append(b, path...)
	b = append(b, make([]byte, 1+pad)...)
	for _, a := range args {
		b = append(append(b, a...), 0)
	}
	for _, e := range env {
		b = append(append(b, e...), 0)
	}
	return b
}

func TestDecodeProcArgs(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		want    []string
		wantErr error
	}{
		{
			name: "sh -c with environment",
			data: procArgs(3, "/bin/sh", 5, []string{"sh", "-c", "server; exit $?"}, []string{"HOME=/Users/u", "PATH=/bin"}),
			want: []string{"sh", "-c", "server; exit $?"},
		},
		{
			name: "no padding, empty inner arg",
			data: procArgs(3, "/usr/bin/env", 0, []string{"env", "", "x"}, nil),
			want: []string{"env", "", "x"},
		},
		{
			name: "npm exec title with padding args",
			data: procArgs(4, "/opt/homebrew/bin/node", 3, []string{"npm exec foo", "", "", ""}, []string{"A=b"}),
			want: []string{"npm exec foo"},
		},
		{name: "argc 0", data: procArgs(0, "/bin/x", 1, nil, nil)},
		{name: "short", data: []byte{1, 0}, wantErr: ErrMalformed},
		{name: "no path terminator", data: append(binary.LittleEndian.AppendUint32(nil, 1), "/bin/sh"...), wantErr: ErrMalformed},
		{name: "fewer args than argc", data: procArgs(3, "/bin/sh", 1, []string{"sh"}, nil), wantErr: ErrMalformed},
		{name: "negative argc", data: procArgs(-1, "/bin/sh", 1, []string{"sh"}, nil), wantErr: ErrMalformed},
		{name: "huge argc", data: procArgs(1<<30, "/bin/sh", 1, []string{"sh"}, nil), wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeProcArgs(tt.data)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("decodeProcArgs() error = %v, want %v", err, tt.wantErr)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("decodeProcArgs() mismatch %s", d)
			}
		})
	}
}

func TestParsePsStat(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    psStat
		wantErr error
	}{
		{
			name: "plain",
			out:  "  4242     1 Ss   Tue Nov 14 22:13:20 2023     Claude\n",
			want: psStat{pid: 4242, ppid: 1, state: "Ss", sec: 1700000000, comm: "Claude"},
		},
		{
			name: "comm with spaces, one-digit day",
			out:  "77 4242 S+ Sun Jan  1 00:00:01 2023 Code Helper (Plugin)",
			want: psStat{pid: 77, ppid: 4242, state: "S+", sec: 1672531201, comm: "Code Helper (Plugin)"},
		},
		{
			name: "zombie",
			out:  "78 77 Z Sun Jan  1 00:00:01 2023 <defunct>\n",
			want: psStat{pid: 78, ppid: 77, state: "Z", sec: 1672531201, comm: "<defunct>"},
		},
		{name: "empty", out: "", wantErr: ErrNotFound},
		{name: "blank", out: "  \n", wantErr: ErrNotFound},
		{name: "two lines", out: "1 0 Ss Sun Jan  1 00:00:01 2023 launchd\n2 1 S Sun Jan  1 00:00:01 2023 x\n", wantErr: ErrMalformed},
		{name: "wrong weekday", out: "77 1 S Mon Jan  1 00:00:01 2023 sh", wantErr: ErrMalformed},
		{name: "no such date", out: "77 1 S Wed Feb 30 00:00:01 2023 sh", wantErr: ErrMalformed},
		{name: "bad month", out: "77 1 S Sun Jun  1 00:00:01 2023 sh", wantErr: ErrMalformed},
		{name: "localised month", out: "77 1 S dim jan  1 00:00:01 2023 sh", wantErr: ErrMalformed},
		{name: "bad time", out: "77 1 S Sun Jan  1 0:00:01 2023 sh", wantErr: ErrMalformed},
		{name: "hour 24", out: "77 1 S Mon Jan  2 24:00:00 2023 sh", wantErr: ErrMalformed},
		{name: "no comm", out: "77 1 S Sun Jan  1 00:00:01 2023", wantErr: ErrMalformed},
		{name: "pid 0", out: "0 0 S Sun Jan  1 00:00:01 2023 kernel_task", wantErr: ErrMalformed},
		{name: "negative ppid", out: "7 -1 S Sun Jan  1 00:00:01 2023 x", wantErr: ErrMalformed},
		{name: "before the epoch", out: "7 1 S Wed Dec 31 23:59:59 1969 x", wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePsStat([]byte(tt.out))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("parsePsStat(%q) error = %v, want %v", tt.out, err, tt.wantErr)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("parsePsStat(%q) mismatch %s", tt.out, d)
			}
		})
	}
}

func TestParsePsArgs(t *testing.T) {
	for out, want := range map[string][]string{
		"":                              nil,
		" \n":                           nil,
		"/bin/sh -c server; exit $?\n":  {"/bin/sh", "-c", "server;", "exit", "$?"},
		"npm exec @scope/server --flag": {"npm exec @scope/server --flag"},
		"node  /usr/bin/npx -y x":       {"node", "/usr/bin/npx", "-y", "x"},
	} {
		if d := diff(want, parsePsArgs([]byte(out))); d != "" {
			t.Errorf("parsePsArgs(%q) %s", out, d)
		}
	}
}

func TestDarwinStartMatches(t *testing.T) {
	for _, tc := range []struct {
		have, want string
		ok         bool
	}{
		{"1700000000", "1700000000", true},
		{"1700000000", "1700000000.000042", true}, // written by a Go or Python host before ABI 3
		{"1700000000", "1700000001", false},
		{"1700000000", "1700000001.000042", false},
		{"1700000000", "1700000000.42", false},
		{"1700000000", "", false},
		{"1700000000", "170000000", false},
		{"1700000000", "1700000000." + testBoot + "." + testNS, false},
	} {
		if got := darwinStartMatches(tc.have, tc.want); got != tc.ok {
			t.Errorf("darwinStartMatches(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.ok)
		}
	}
}

// psLine formats one line of ps output for a process started at sec.
func psLine(pid, ppid int, state string, sec int64, comm string) string {
	return fmt.Sprintf("%5d %5d %-4s %s %s\n", pid, ppid, state, time.Unix(sec, 0).UTC().Format("Mon Jan _2 15:04:05 2006"), comm)
}

// darwinSystem serves a macOS process tree through sysctl and procargs
// answers or, with ps set, through ps answers (sysctl unsupported, as for
// Node).
func darwinSystem(ps bool, procs ...struct {
	pid, ppid int
	comm      string
	args      []string
	sec       int64
}) *system {
	sys := newSystem(0)
	for _, p := range procs {
		key := strconv.Itoa(p.pid)
		if ps {
			sys.answers["ps "+key] = hostfuncs.InspectResult{Data: []byte(psLine(p.pid, p.ppid, "S", p.sec, p.comm)), Args: []byte(strings.Join(p.args, " ") + "\n")}
			continue
		}
		sys.answers["sysctl "+key] = hostfuncs.InspectResult{Data: kinfoBytes(int32(p.pid), int32(p.ppid), p.comm, 2, p.sec, 123456)}
		if p.args != nil {
			sys.answers["procargs "+key] = hostfuncs.InspectResult{Data: procArgs(int32(len(p.args)), "/bin/"+p.comm, 2, p.args, []string{"HOME=/Users/u"})}
		} else {
			sys.answers["procargs "+key] = errResult(hostfuncs.CodePermission)
		}
	}
	return sys
}

func TestResolve_Darwin(t *testing.T) {
	type proc = struct {
		pid, ppid int
		comm      string
		args      []string
		sec       int64
	}
	tree := []proc{
		{pid: 1, ppid: 0, comm: "launchd", args: []string{"/sbin/launchd"}, sec: 1600000000},
		{pid: 500, ppid: 1, comm: "Claude", args: nil, sec: 1700000000},
		{pid: 600, ppid: 500, comm: "npm exec @model", args: []string{"npm exec @modelcontextprotocol/server-everything"}, sec: 1700000100},
		{pid: 700, ppid: 600, comm: "sh", args: []string{"sh", "-c", "mcp-server-everything"}, sec: 1700000101},
		{pid: 800, ppid: 700, comm: "node", args: []string{"node", "server.js"}, sec: 1700000102},
	}
	for _, ps := range []bool{false, true} {
		sys := darwinSystem(ps, tree...)
		f := hostfuncs.Facts{OS: "darwin", PID: 800}
		id, err := Resolve(f, NewLauncherSet(nil, ""), sys.inspect)
		if err != nil {
			t.Fatalf("ps %v: Resolve: %v", ps, err)
		}
		// The start time ends in "c" and the hex of p_comm ("Claude").
		if id.PID != 500 || id.StartTime != "1700000000.c436c61756465" || len(id.Chain) != 3 || id.Stdio != "not checked: no subreapers on this system" {
			t.Errorf("ps %v: Resolve = %+v", ps, id)
		}
		// One call for the server (two with ps: sysctl answered unsupported
		// first), then one per level.
		want := 4
		if ps {
			want = 5
		}
		if sys.calls != want {
			t.Errorf("ps %v: %d calls, want %d", ps, sys.calls, want)
		}
		if ps && sys.ops[len(sys.ops)-1].Op != hostfuncs.OpPs {
			t.Errorf("ps mode asked %v", sys.ops[len(sys.ops)-1])
		}
	}

	// Orphaned to launchd; launchd as host; gone parent; malformed kinfo.
	orphan := darwinSystem(false, tree[0], proc{pid: 800, ppid: 1, comm: "node", sec: 1700000102})
	if _, err := Resolve(hostfuncs.Facts{OS: "darwin", PID: 800}, NewLauncherSet(nil, ""), orphan.inspect); !errors.Is(err, ErrReaper) {
		t.Errorf("orphan: error = %v, want %v", err, ErrReaper)
	}
	gone := darwinSystem(false, proc{pid: 800, ppid: 700, comm: "node", sec: 1700000102})
	gone.answers["sysctl 700"] = errResult(hostfuncs.CodeNotFound)
	if _, err := Resolve(hostfuncs.Facts{OS: "darwin", PID: 800}, NewLauncherSet(nil, ""), gone.inspect); !errors.Is(err, ErrRace) {
		t.Errorf("gone parent: error = %v, want %v", err, ErrRace)
	}
	bad := darwinSystem(false, tree...)
	bad.answers["sysctl 500"] = hostfuncs.InspectResult{Data: []byte("short")}
	if _, err := Resolve(hostfuncs.Facts{OS: "darwin", PID: 800}, NewLauncherSet(nil, ""), bad.inspect); !errors.Is(err, ErrMalformed) {
		t.Errorf("malformed kinfo: error = %v, want %v", err, ErrMalformed)
	}
	wrong := darwinSystem(false, tree...)
	wrong.answers["sysctl 500"] = wrong.answers["sysctl 600"]
	if _, err := Resolve(hostfuncs.Facts{OS: "darwin", PID: 800}, NewLauncherSet(nil, ""), wrong.inspect); !errors.Is(err, ErrMalformed) {
		t.Errorf("kinfo of another pid: error = %v, want %v", err, ErrMalformed)
	}
	none := darwinSystem(true) // ps of nothing: not_found (ps printed nothing)
	none.answers["ps 800"] = errResult(hostfuncs.CodeNotFound)
	if _, err := Resolve(hostfuncs.Facts{OS: "darwin", PID: 800}, NewLauncherSet(nil, ""), none.inspect); !errors.Is(err, ErrNotFound) {
		t.Errorf("no server: error = %v, want %v", err, ErrNotFound)
	}
}

func TestLiveness_Darwin(t *testing.T) {
	sys := newSystem(0)
	sys.answers["sysctl 500"] = hostfuncs.InspectResult{Data: kinfoBytes(500, 1, "Claude", 2, 1700000000, 42)}
	sys.answers["sysctl 501"] = hostfuncs.InspectResult{Data: kinfoBytes(501, 1, "zombie", darwinZombie, 1700000000, 42)}
	sys.answers["sysctl 502"] = errResult(hostfuncs.CodeNotFound)
	sys.answers["sysctl 503"] = errResult(hostfuncs.CodePermission)
	sys.answers["sysctl 504"] = hostfuncs.InspectResult{Data: []byte("garbage")}
	// 505 and 506: sysctl unsupported (the default), ps answers.
	sys.answers["ps 505"] = hostfuncs.InspectResult{Data: []byte(psLine(505, 1, "Ss", 1700000000, "Claude"))}
	sys.answers["ps 506"] = hostfuncs.InspectResult{Data: []byte(psLine(506, 1, "Z", 1700000000, "x"))}
	claude := "." + darwinImage("Claude")
	refs := []HostRef{
		{500, "1700000000"}, {500, "1700000000.000042"}, {500, "1700000001"},
		{501, "1700000000"}, {502, "1700000000"}, {503, "1700000000"}, {504, "1700000000"},
		{505, "1700000000"}, {505, "1699999999"}, {506, "1700000000"}, {507, "1"},
		// With the image: the same program, another program (the host
		// exec'd: same pid and start second), through sysctl and ps.
		{500, "1700000000" + claude}, {500, "1700000000." + darwinImage("python3.11")},
		{505, "1700000000" + claude}, {505, "1700000000." + darwinImage("node")},
	}
	want := []string{
		hostfuncs.HostAlive, hostfuncs.HostAlive, hostfuncs.HostGone,
		hostfuncs.HostGone, hostfuncs.HostGone, hostfuncs.HostUnknown, hostfuncs.HostUnknown,
		hostfuncs.HostAlive, hostfuncs.HostGone, hostfuncs.HostGone, hostfuncs.HostUnknown,
		hostfuncs.HostAlive, hostfuncs.HostGone, hostfuncs.HostAlive, hostfuncs.HostGone,
	}
	got := Liveness(hostfuncs.Facts{OS: "darwin", PID: 9}, sys.inspect, refs)
	if d := diff(want, got); d != "" {
		t.Errorf("Liveness %s", d)
	}
	if sys.calls != 2 {
		t.Errorf("%d calls, want 2", sys.calls)
	}
}

func FuzzParsePsStat(f *testing.F) {
	f.Add([]byte(psLine(4242, 1, "Ss", 1700000000, "Claude")))
	f.Add([]byte("77 4242 S+ Sun Jan  1 00:00:01 2023 Code Helper (Plugin)"))
	f.Add([]byte(""))
	f.Add([]byte("1 0 Ss Wed Feb 30 00:00:01 2023 x"))
	f.Fuzz(func(t *testing.T, out []byte) {
		st, err := parsePsStat(out)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNotFound) {
				t.Fatalf("parsePsStat(%q) error %v wraps neither ErrMalformed nor ErrNotFound", out, err)
			}
			return
		}
		if st.pid <= 0 || st.ppid < 0 || st.sec <= 0 || st.comm == "" || st.state == "" {
			t.Fatalf("parsePsStat(%q) = %+v", out, st)
		}
		// The line it accepted is the one it would print.
		if got := psLine(st.pid, st.ppid, st.state, st.sec, st.comm); parse(t, got) != st {
			t.Fatalf("parsePsStat(%q) = %+v does not round-trip through %q", out, st, got)
		}
	})
}

func parse(t *testing.T, line string) psStat {
	st, err := parsePsStat([]byte(line))
	if err != nil {
		t.Fatalf("parsePsStat(%q): %v", line, err)
	}
	return st
}

func FuzzDecodeKinfo(f *testing.F) {
	f.Add(kinfoBytes(4242, 1, "Claude", 2, 1700000000, 42))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := decodeKinfo(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("decodeKinfo error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if k.pid <= 0 || k.ppid < 0 || k.comm == "" || k.sec <= 0 {
			t.Fatalf("decodeKinfo = %+v", k)
		}
	})
}

// TestCivilDates checks daysFromCivil, daysIn and the weekday rule of
// parsePsStat against the time package, every day from 1969 to 2101.
func TestCivilDates(t *testing.T) {
	for d := time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2101; d = d.AddDate(0, 0, 1) {
		days := daysFromCivil(d.Year(), int(d.Month()), d.Day())
		if days*86400 != d.Unix() {
			t.Fatalf("%s: %d days, want %d", d.Format(time.DateOnly), days, d.Unix()/86400)
		}
		if next := d.AddDate(0, 0, 1); next.Month() != d.Month() && daysIn(d.Year(), int(d.Month())) != d.Day() {
			t.Fatalf("%s: daysIn = %d", d.Format(time.DateOnly), daysIn(d.Year(), int(d.Month())))
		}
		if days >= 0 && psDays[(days+4)%7] != d.Weekday().String()[:3] {
			t.Fatalf("%s: weekday %s, want %s", d.Format(time.DateOnly), psDays[(days+4)%7], d.Weekday())
		}
	}
}
