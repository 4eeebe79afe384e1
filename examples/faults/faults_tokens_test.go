//go:build linux && faults

package faults_test

// Faults 7-9: the token file's contents under attack (corrupt files, a
// server SIGKILLed mid-store, several instances storing at once).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/internal/servertest"
)

func plantDir(t *testing.T, dir, name string, tok []byte, perm os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), tok, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, perm)
}

// 7. Corrupt token files.
func faultCorrupt(t *testing.T, s *server) {
	me := hostNames(t)
	type plantFn func(t *testing.T, path string, real []byte)
	content := func(b []byte) plantFn {
		return func(t *testing.T, path string, _ []byte) {
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	binary := make([]byte, 64)
	for i := range binary {
		binary[i] = byte(i * 7)
	}
	cases := []struct {
		id, fault, injection string
		plant                plantFn
		rejected             bool // valid-looking: only the broker can refuse it
		dir                  bool
	}{
		{"7a", "Empty token file", "0 bytes", content(nil), false, false},
		{"7b", "Truncated token file", "the first half of a real token (43 → 21 bytes)",
			func(t *testing.T, path string, real []byte) { os.WriteFile(path, real[:len(real)/2], 0o600) }, true, false},
		{"7c", "Binary token file", "64 bytes 0x00, 0x07, 0x0e, …", content(binary), false, false},
		{"7d", "Non-UTF-8 token file", "`\\xff\\xfe` and an invalid UTF-8 sequence around ASCII", content([]byte("\xff\xfetok\xc3\x28en")), false, false},
		{"7e", "Token with a trailing newline", "a real token followed by `\\n` (what `echo` writes)",
			func(t *testing.T, path string, real []byte) { os.WriteFile(path, append(real, '\n'), 0o600) }, false, false},
		{"7f", "Oversized token file", "4097 bytes of `a`", content(bytes.Repeat([]byte("a"), 4097)), false, false},
		{"7g", "10 MB token file", "10 MiB of `a`", content(bytes.Repeat([]byte("a"), 10<<20)), false, false},
		{"7h", "64 GiB sparse token file", "`truncate -s 64G` (reading it whole would never finish)",
			func(t *testing.T, path string, _ []byte) {
				fl, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					t.Fatal(err)
				}
				defer fl.Close()
				if err := fl.Truncate(64 << 30); err != nil {
					skipFault(t, "this file system cannot hold a 64 GiB sparse file: "+err.Error())
				}
			}, false, false},
		{"7i", "FIFO at the token path", "`mkfifo` (a blocking open would hang the server)",
			func(t *testing.T, path string, _ []byte) {
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Fatal(err)
				}
			}, false, false},
		{"7j", "Directory at the token path", "`mkdir` with a file inside",
			func(t *testing.T, path string, _ []byte) {
				os.Mkdir(path, 0o700)
				os.WriteFile(filepath.Join(path, "x"), []byte("x"), 0o600)
			}, false, true},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			f := newFx(t, s)
			var real []byte
			var realSession string
			if c.id == "7b" || c.id == "7e" {
				other := filepath.Join(t.TempDir(), "other", f.App)
				r := f.launch(s.cmd(), []string{f.StateVar(other)}, "")
				real, realSession = mustRead(t, filepath.Join(other, me.token)), r.SessionID
			}
			os.Mkdir(f.StateDir, 0o700)
			path := filepath.Join(f.StateDir, me.token)
			c.plant(t, path, real)
			start := time.Now()
			a := f.launch(s.cmd(), nil, "")
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("launch took %v", d)
			}
			if a.Resumed || (realSession != "" && a.SessionID == realSession) {
				t.Errorf("resumed from a corrupt file: %+v", a)
			}
			var logs []string
			if c.rejected {
				logs = append(logs, f.mustLog(lineRejected))
			} else {
				logs = append(logs, f.mustLog(lineCorrupt))
			}
			b := f.launch(s.cmd(), nil, "")
			var outcome string
			if c.dir {
				logs = append(logs, f.mustLogOne(lineDeleteFailed, "is a directory", "illegal operation on a directory"))
				var how string
				switch {
				case f.findLog(lineWriteFailed, "file exists"):
					logs = append(logs, f.mustLog(lineWriteFailed, "file exists"))
					how = "rename refuses a directory target: EEXIST"
				default:
					logs = append(logs, f.mustLogOne(lineWriteFailed, "is a directory", "illegal operation on a directory"))
					how = "rename onto a directory: EISDIR"
				}
				if fi, err := os.Lstat(path); err != nil || !fi.IsDir() {
					t.Errorf("the directory at the token path: %v %v", fi, err)
				}
				if b.Resumed {
					t.Errorf("resumed although no token could be stored: %+v", b)
				}
				outcome = "treated as corrupt; it can be neither deleted (unlink: EISDIR) nor replaced (" + how + "): every launch starts fresh until someone removes it"
			} else {
				checkTokenFile(t, path)
				if !b.Resumed || b.SessionID != a.SessionID {
					t.Errorf("relaunch: %+v, want %s resumed (the file should hold the new token)", b, a.SessionID)
				}
				outcome = "fresh session; the file was deleted and replaced by the new token (the next launch resumed it)"
				if c.rejected {
					outcome = "valid-looking, so offered to the broker, which refused it; file deleted, fresh session, replaced by the new token (the next launch resumed it)"
				}
				switch c.id {
				case "7g", "7h":
					outcome = "bounded read (at most 4097 bytes), no delay; " + outcome
				case "7i":
					outcome = "no hang (opened O_NONBLOCK, refused after fstat: not a regular file); " + outcome
				}
			}
			f.row(c.id, c.fault, c.injection, outcome, logs, "no")
		})
	}
}

// 8. SIGKILL during store, many times.
func faultKillDuringStore(t *testing.T, s *server) {
	stress := s.stress(t)
	const lanes = 2
	per := (s.kills + lanes - 1) / lanes
	stats := make([]laneStats, lanes)
	dirs := make([]string, lanes)
	var wg sync.WaitGroup
	for l := range lanes {
		dirs[l] = filepath.Join(t.TempDir(), "state", s.app())
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[l] = killLane(stress, dirs[l], l, per)
		}()
	}
	wg.Wait()
	var total laneStats
	for _, st := range stats {
		for _, p := range st.problems {
			t.Error(p)
		}
		if strings.Contains(st.stderr, "plugin failed") || strings.Contains(st.stderr, "panic") || strings.Contains(st.stderr, "Traceback") {
			t.Errorf("a store loop logged a failure:\n%s", st.stderr)
		}
		total.kills += st.kills
		total.newest += st.newest
		total.older += st.older
		total.none += st.none
		total.strays += st.strays
	}
	t.Logf("SIGKILL stress: %d kills; after each, a fresh store loaded the killed loop's token %d times, an earlier loop's %d times, nothing %d times; %d stray temp files left",
		total.kills, total.newest, total.older, total.none, total.strays)
	if total.kills < s.kills {
		t.Errorf("only %d kills", total.kills)
	}
	// One store at a time (MCP_RESUME_INSTANCE=-): nothing to mark ambiguous.
	for _, d := range dirs {
		if m := markerNames(d); len(m) > 0 {
			t.Errorf("ambiguity markers %v after the kills", m)
		}
	}
	// A real server on the crashed directory: the stress token is offered,
	// the broker refuses it, the server goes on.
	f := newFx(t, s)
	f.StateDir = dirs[0]
	r := f.launch(s.cmd(), nil, "")
	if r.Resumed {
		t.Errorf("resumed a stress token: %+v", r)
	}
	rej := f.mustLog(lineRejected)
	f.row("8", "SIGKILL during store",
		"processes (the language's binding: the Go host package, mcp_resume, the npm package) store self-checking tokens (40 B–4 KiB) in a tight loop, each SIGKILLed 0–4 ms after its first store; a fresh store loads after each kill (`-faults.kills`: Go 200; `-faults.kills-slow`: Python and TypeScript 100, each loop starts a runtime); MCP_RESUME_INSTANCE=- (no instance key)",
		"every load returned a complete token that had been stored (the killed loop's or an earlier one), never a partial one, and the token never vanished; temp files of killed writers remain (counted in the test log); a real server then offered the last token, the broker refused it, fresh session",
		[]string{"never `" + lineCorrupt + "` in any load", rej}, "no")
}

// laneStats is what one kill lane saw.
type laneStats struct {
	kills    int // store loops killed
	newest   int // loads that returned the killed loop's own token
	older    int // loads that returned an earlier loop's token
	none     int // loads that found no token
	strays   int // temporary files left in the directory at the end
	problems []string
	stderr   string
}

// killLane runs per store loops (stress helper "storeloop", command
// stress) one after the other in dir, SIGKILLs each after a random delay,
// and after each kill loads through a fresh store (helper "loader", a
// child of this process like the loops, so the same host).
func killLane(stress []string, dir string, lane, per int) (st laneStats) {
	var stderr servertest.SyncBuffer
	defer func() { st.stderr = stderr.String() }()
	os.MkdirAll(dir, 0o700)
	env := append(os.Environ(), stressEnv(dir)...)
	loader := exec.Command(stress[0], stress[1:]...)
	loader.Env = append(env, "FAULTS_HELPER=loader")
	loader.Stderr = &stderr
	lin, _ := loader.StdinPipe()
	lout, _ := loader.StdoutPipe()
	if err := loader.Start(); err != nil {
		st.problems = append(st.problems, err.Error())
		return st
	}
	defer func() { lin.Close(); loader.Wait() }()
	answers := bufio.NewScanner(lout)
	rng := rand.New(rand.NewPCG(uint64(lane), 8))
	everFound := false
	base := lane * 1_000_000
	for k := 0; k < per && len(st.problems) < 5; k++ {
		seed := base + k
		cmd := exec.Command(stress[0], stress[1:]...)
		cmd.Env = append(env, "FAULTS_HELPER=storeloop", "FAULTS_SEED="+strconv.Itoa(seed))
		cmd.Stderr = &stderr
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			st.problems = append(st.problems, err.Error())
			return st
		}
		ready := make(chan bool, 1)
		go func() {
			line, _ := bufio.NewReader(out).ReadString('\n')
			ready <- line == "ready\n"
			io.Copy(io.Discard, out)
		}()
		started := false
		select {
		case started = <-ready:
		case <-time.After(30 * time.Second):
		}
		if !started {
			cmd.Process.Kill()
			cmd.Wait()
			st.problems = append(st.problems, "a store loop did not start")
			return st
		}
		time.Sleep(time.Duration(rng.IntN(4000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		st.kills++
		st.strays = len(tempFiles(dir))

		fmt.Fprintln(lin, filepath.Dir(dir)) // the state root: the loader's app directory is dir
		if !answers.Scan() {
			st.problems = append(st.problems, "the loader died")
			return st
		}
		var ans loaderAnswer
		json.Unmarshal(answers.Bytes(), &ans)
		switch {
		case ans.OpenErr != "":
			st.problems = append(st.problems, "loader: "+ans.OpenErr)
		case ans.Events["token_corrupted"] > 0:
			st.problems = append(st.problems, fmt.Sprintf("kill %d: a fresh store found the token file corrupt", seed))
		case ans.Found && !ans.Valid:
			st.problems = append(st.problems, fmt.Sprintf("kill %d: loaded a %d-byte token that is not one the loop stored (partial or garbled)", seed, ans.Len))
		case ans.Found && (ans.Seed > seed || ans.Seed < base):
			st.problems = append(st.problems, fmt.Sprintf("kill %d: loaded a token of loop %d", seed, ans.Seed))
		case ans.Found && ans.Seed == seed:
			st.newest++
			everFound = true
		case ans.Found:
			st.older++
			everFound = true
		case everFound:
			st.problems = append(st.problems, fmt.Sprintf("kill %d: the token file vanished", seed))
		default:
			st.none++
		}
	}
	return st
}

// 9. Several instances under one host at once.
func faultConcurrentInstances(t *testing.T, s *server) {
	stress := s.stress(t)
	me := hostNames(t)
	for _, n := range []int{2, 4, 8, 16} {
		t.Run(fmt.Sprintf("%d_instances", n), func(t *testing.T) {
			f := newFx(t, s)
			type proc struct {
				cmd *exec.Cmd
				in  io.WriteCloser
				out *bufio.Reader
			}
			procs := make([]proc, n)
			for i := range procs {
				cmd := exec.Command(stress[0], stress[1:]...)
				cmd.Env = append(append(os.Environ(), stressEnv(f.StateDir)...), "FAULTS_HELPER=hammer",
					"FAULTS_INSTANCE="+strconv.Itoa(i), "FAULTS_ROUNDS=5", "FAULTS_OPS="+strconv.Itoa(*faultHammerOps))
				cmd.Stderr = f.Stderr
				in, _ := cmd.StdinPipe()
				out, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				procs[i] = proc{cmd, in, bufio.NewReader(out)}
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			}
			for _, p := range procs {
				if line, _ := p.out.ReadString('\n'); line != "ready\n" {
					t.Fatalf("a hammer instance said %q", line)
				}
			}
			for _, p := range procs {
				io.WriteString(p.in, "go\n")
			}
			reports := make([]hammerReport, n)
			for i, p := range procs {
				b, _ := io.ReadAll(p.out)
				if err := p.cmd.Wait(); err != nil {
					t.Errorf("instance %d crashed: %v", i, err)
				}
				if err := json.Unmarshal(b, &reports[i]); err != nil {
					t.Fatalf("instance %d printed %q: %v", i, b, err)
				}
			}
			events := map[string]int{}
			loads, rejects := 0, 0
			for _, r := range reports {
				if r.Invalid > 0 {
					t.Errorf("instance %d loaded %d partial or garbled tokens", r.Instance, r.Invalid)
				}
				if r.OpenErrs > 0 {
					t.Errorf("instance %d: %d opens failed", r.Instance, r.OpenErrs)
				}
				for _, l := range r.Loads {
					if l[0] < 0 || l[0] >= n || l[1] >= reports[l[0]].Stored {
						t.Errorf("instance %d loaded token s%d.i%d, which no instance stored", r.Instance, l[0], l[1])
					}
				}
				loads, rejects = loads+len(r.Loads), rejects+r.Rejects
				for k, v := range r.Events {
					events[k] += v
				}
			}
			if events["token_corrupted"] > 0 {
				t.Errorf("%d loads found the token file corrupt", events["token_corrupted"])
			}
			// MCP_RESUME_INSTANCE=- (stressEnv): no instance key, so a busy
			// lock only turns resume off for the store that met it; with a
			// key, the first busy lock would mark it ambiguous and end the
			// stress (faults 31a, 26).
			if m := markerNames(f.StateDir); len(m) > 0 || events["instance_ambiguous"] > 0 {
				t.Errorf("ambiguity under MCP_RESUME_INSTANCE=-: markers %v, %d instance_ambiguous lines", m, events["instance_ambiguous"])
			}
			final, err := os.ReadFile(filepath.Join(f.StateDir, me.token))
			finalState := "absent"
			if err == nil {
				if _, _, ok := parseStressToken(string(final)); !ok {
					t.Errorf("the final token file holds %d bytes that no instance stored", len(final))
				}
				finalState = "valid"
			}
			t.Logf("%d instances: %d loads (all complete), %d rejects, final file %s, events %v", n, loads, rejects, finalState, events)
			r := f.launch(s.cmd(), nil, "")
			if r.Resumed {
				t.Errorf("resumed a stress token: %+v", r)
			}
			logs := []string{"never `" + lineCorrupt + "`"}
			if finalState == "valid" {
				logs = append(logs, f.mustLog(lineRejected))
			}
			f.row(fmt.Sprintf("9/%d", n), fmt.Sprintf("%d instances under one host at once", n),
				fmt.Sprintf("%d processes of the language's binding (real identity: all children of the test process) each doing 5 × (open a store, %s × load / reject 1 in 4 / store, close), with MCP_RESUME_INSTANCE=- (no instance key: one session per host by choice)", n, "`-faults.hammer-ops`"),
				"no crash; every load returned a complete token some instance had stored, never a garbled one; no corruption seen; the lock let one store at a time use the file, a store that found it held ran without resume, and with no instance key nothing was marked ambiguous; a real server then found a usable file (offered, refused by the broker: stress tokens are not the broker's)",
				logs, "no")
		})
	}
}
