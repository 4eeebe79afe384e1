package procid

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeFD is one open fd in a fixture /proc tree: what its link names and the
// octal flags its fdinfo shows.
type fakeFD struct {
	link  string
	flags string // "" writes no fdinfo file
}

// writeFDs writes <root>/<who>/fd/<n> links and <root>/<who>/fdinfo/<n>.
func writeFDs(t *testing.T, root, who string, fds map[string]fakeFD) {
	t.Helper()
	for _, sub := range []string{"fd", "fdinfo"} {
		if err := os.MkdirAll(filepath.Join(root, who, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for n, fd := range fds {
		if err := os.Symlink(fd.link, filepath.Join(root, who, "fd", n)); err != nil {
			t.Fatal(err)
		}
		if fd.flags != "" {
			info := "pos:\t0\nflags:\t" + fd.flags + "\nmnt_id:\t15\nino:\t1\n"
			if err := os.WriteFile(filepath.Join(root, who, "fdinfo", n), []byte(info), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestCheckStdio(t *testing.T) {
	const hostPID = 42
	host := Process{PID: hostPID, Name: "mcp-host"}
	// The server's own fds: stdin reads pipe 10, stdout writes pipe 11.
	pipes := map[string]fakeFD{"0": {"pipe:[10]", "00"}, "1": {"pipe:[11]", "01"}}
	pipe := func(int) fdInfo { return fdInfo{kind: fdPipe} }
	tests := []struct {
		name  string
		self  map[string]fakeFD
		host  map[string]fakeFD // nil: no <root>/42 at all
		probe fdProbe
		// hostFDFile makes <root>/42/fd a regular file, so listing it fails
		// with ENOTDIR (standing in for EACCES, which root does not get).
		hostFDFile bool
		want       string // Stdio, when no error
		wantErr    error
		wantInErr  []string
	}{
		{
			name:  "host holds the write end of stdin and the read end of stdout",
			self:  pipes,
			host:  map[string]fakeFD{"0": {"/dev/null", "0100000"}, "7": {"pipe:[10]", "0100001"}, "9": {"pipe:[11]", "0100000"}},
			probe: pipe,
			want:  "verified: stdin pipe:[10] is held by the host as fd 7",
		},
		{
			name:  "only stdout verified",
			self:  pipes,
			host:  map[string]fakeFD{"9": {"pipe:[11]", "02000000"}},
			probe: pipe,
			want:  "verified: stdout pipe:[11] is held by the host as fd 9",
		},
		{
			name:  "host fd opened read-write counts as the other end",
			self:  pipes,
			host:  map[string]fakeFD{"3": {"pipe:[10]", "02"}},
			probe: pipe,
			want:  "verified: stdin pipe:[10] is held by the host as fd 3",
		},
		{
			name:      "host holds only the server's own ends, as a forking launcher does",
			self:      pipes,
			host:      map[string]fakeFD{"0": {"pipe:[10]", "00"}, "1": {"pipe:[11]", "01"}},
			probe:     pipe,
			wantErr:   ErrAdopted,
			wantInErr: []string{`the host pid 42 ("mcp-host") does not hold the other end of the server's stdio (stdin pipe:[10] is not held by the host; stdout pipe:[11] is not held by the host)`, "subreaper", LaunchersEnv},
		},
		{
			name:      "host holds neither pipe (adopted by a subreaper)",
			self:      pipes,
			host:      map[string]fakeFD{"0": {"/dev/null", "00"}, "1": {"pipe:[99]", "01"}},
			probe:     pipe,
			wantErr:   ErrAdopted,
			wantInErr: []string{"stdin pipe:[10] is not held by the host; stdout pipe:[11] is not held by the host"},
		},
		{
			name: "disproved beats not checked",
			self: map[string]fakeFD{"0": {"/dev/pts/3", "02"}, "1": {"pipe:[11]", "01"}},
			host: map[string]fakeFD{"1": {"pipe:[11]", "01"}},
			probe: func(fd int) fdInfo {
				if fd == 0 {
					return fdInfo{kind: fdOther}
				}
				return fdInfo{kind: fdPipe}
			},
			wantErr:   ErrAdopted,
			wantInErr: []string{"(stdout pipe:[11] is not held by the host)"},
		},
		{
			name:      "host gone",
			self:      pipes,
			probe:     pipe,
			wantErr:   ErrRace,
			wantInErr: []string{`the host pid 42 ("mcp-host") exited during the stdio check`},
		},
		{
			name:       "host fds cannot be listed",
			self:       pipes,
			host:       map[string]fakeFD{},
			hostFDFile: true,
			probe:      pipe,
			want:       "not checked: stdin pipe:[10]: cannot list the host's fds: not a directory; stdout pipe:[11]: cannot list the host's fds: not a directory",
		},
		{
			name:  "own fdinfo unreadable",
			self:  map[string]fakeFD{"0": {"pipe:[10]", ""}, "1": {"pipe:[11]", "bogus"}},
			host:  map[string]fakeFD{"7": {"pipe:[10]", "01"}},
			probe: pipe,
			want:  "not checked: stdin pipe:[10]: no such file or directory; stdout pipe:[11]: no octal flags: line in ",
		},
		{
			name:  "named FIFOs",
			self:  map[string]fakeFD{"0": {"/tmp/in.fifo", "00"}, "1": {"/tmp/out.fifo", "01"}},
			host:  map[string]fakeFD{"7": {"/tmp/in.fifo", "01"}},
			probe: pipe,
			want:  "not checked: stdin is a named FIFO; stdout is a named FIFO",
		},
		{
			name:  "tty and /dev/null",
			self:  map[string]fakeFD{"0": {"/dev/pts/3", "02"}, "1": {"/dev/null", "01"}},
			host:  map[string]fakeFD{},
			probe: func(int) fdInfo { return fdInfo{kind: fdOther} },
			want:  "not checked: stdin is not a pipe or socket; stdout is not a pipe or socket",
		},
		{
			name:  "closed",
			self:  map[string]fakeFD{},
			host:  map[string]fakeFD{},
			probe: func(int) fdInfo { return fdInfo{kind: fdClosed} },
			want:  "not checked: stdin is closed; stdout is closed",
		},
		{
			name:  "socket pair created by the host",
			self:  map[string]fakeFD{"0": {"socket:[20]", "02"}, "1": {"socket:[21]", "02"}},
			host:  map[string]fakeFD{},
			probe: func(int) fdInfo { return fdInfo{kind: fdSocket, peerPID: hostPID} },
			want:  "verified: stdin socket:[20] peer is the host",
		},
		{
			name: "socket pair created by another process",
			self: map[string]fakeFD{"0": {"socket:[20]", "02"}, "1": {"socket:[21]", "02"}},
			host: map[string]fakeFD{},
			probe: func(fd int) fdInfo {
				return fdInfo{kind: fdSocket, peerPID: 7 + fd}
			},
			wantErr:   ErrAdopted,
			wantInErr: []string{"(stdin socket:[20] peer is pid 7, not the host; stdout socket:[21] peer is pid 8, not the host)"},
		},
		{
			name:  "socket without peer credentials",
			self:  map[string]fakeFD{"0": {"socket:[20]", "02"}, "1": {"socket:[21]", "02"}},
			host:  map[string]fakeFD{},
			probe: func(int) fdInfo { return fdInfo{kind: fdSocket} },
			want:  "not checked: stdin socket:[20] is a socket without peer credentials; stdout socket:[21] is a socket without peer credentials",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFDs(t, root, "self", tt.self)
			if tt.host != nil {
				writeFDs(t, root, "42", tt.host)
			}
			if tt.hostFDFile {
				dir := filepath.Join(root, "42", "fd")
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dir, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := &linuxReader{root: root}
			got, err := r.checkStdio(1234, host, tt.probe)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("checkStdio() = %q, %v; want error %v", got, err, tt.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "procid: resolve MCP host of pid 1234: ") {
					t.Errorf("error %q does not name the server pid", err)
				}
				for _, s := range tt.wantInErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("checkStdio() error: %v", err)
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("checkStdio() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsAnonPipe(t *testing.T) {
	for link, want := range map[string]bool{
		"pipe:[1]": true, "pipe:[4026532000]": true,
		"pipe:[]": false, "pipe:[x]": false, "pipe:1": false, "socket:[1]": false,
		"/tmp/pipe:[1]": false, "pipe:[1] ": false, "": false,
	} {
		if got := isAnonPipe(link); got != want {
			t.Errorf("isAnonPipe(%q) = %v, want %v", link, got, want)
		}
	}
}
