package procid

import (
	"encoding/binary"
	"errors"
	"testing"
)

// kinfoBytes builds a little-endian struct kinfo_proc as sysctl
// kern.proc.pid returns it on darwin/amd64 and darwin/arm64, with the given
// fields at the offsets checked against x/sys/unix in procid_darwin.go and
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
			want:      kinfo{pid: 4242, ppid: 1, comm: "Claude", stat: 2, sec: 1700000000, usec: 42},
			wantStart: "1700000000.000042",
		},
		{
			name:      "sixteen-byte comm, usec at its maximum",
			data:      kinfoBytes(77, 4242, "0123456789abcdef", 3, 1, 999999),
			want:      kinfo{pid: 77, ppid: 4242, comm: "0123456789abcdef", stat: 3, sec: 1, usec: 999999},
			wantStart: "1.999999",
		},
		{
			name:      "odd comm",
			data:      kinfoBytes(78, 77, "x) (y", 5, 1700000001, 0),
			want:      kinfo{pid: 78, ppid: 77, comm: "x) (y", stat: 5, sec: 1700000001},
			wantStart: "1700000001.000000",
		},
		{
			name:      "longer record",
			data:      append(kinfoBytes(79, 1, "sh", 2, 10, 10), 0, 0, 0, 0),
			want:      kinfo{pid: 79, ppid: 1, comm: "sh", stat: 2, sec: 10, usec: 10},
			wantStart: "10.000010",
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
			if got := got.startTime(); got != tt.wantStart {
				t.Errorf("startTime() = %q, want %q", got, tt.wantStart)
			}
		})
	}
}

func TestKinfo_Process(t *testing.T) {
	k := kinfo{pid: 4242, ppid: 1, comm: "Claude", stat: 2, sec: 1700000000, usec: 42}
	want := Process{PID: 4242, PPID: 1, Name: "Claude", Args: []string{"a"}, StartTime: "1700000000.000042"}
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

func TestStartTimeMatches(t *testing.T) {
	for _, tc := range []struct {
		have, want string
		ok         bool
	}{
		{"1700000000.000042", "1700000000.000042", true},
		{"1700000000.000042", "1700000000", true}, // a TypeScript host's whole seconds
		{"1700000000.000042", "1700000001", false},
		{"1700000000.000042", "1700000000.000043", false},
		{"1700000000.000042", "", false},
		{"1700000000.000042", "170000000", false},
	} {
		if got := startTimeMatches(tc.have, tc.want); got != tc.ok {
			t.Errorf("startTimeMatches(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.ok)
		}
	}
}
