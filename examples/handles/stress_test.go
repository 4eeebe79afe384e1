//go:build linux && handles

package handles_test

// Rows H11 (SIGKILL in a put loop) and H12 (compare-and-set increments from
// 2 processes × 8 threads), through each language's public API: the stress
// helpers of helpers_test.go and testdata/.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
)

// helperProc is one running stress helper.
type helperProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its stdout, line by line; closed at EOF
}

// startHelper starts s's helper in mode with the given HANDLES_* settings;
// its stderr goes to the fixture's. The test's end kills it.
func (f *fx) startHelper(s *server, mode string, vars ...string) *helperProc {
	f.T.Helper()
	cmd := exec.Command(s.helper[0], s.helper[1:]...)
	cmd.Env = append(os.Environ(), append([]string{"HANDLES_HELPER=" + mode, "HANDLES_ROOT=" + f.stateRoot(), "HANDLES_APP=" + sharedApp}, vars...)...)
	cmd.Stderr = f.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		f.T.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		f.T.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		f.T.Fatalf("starting %v: %v", s.helper, err)
	}
	p := &helperProc{cmd: cmd, stdin: stdin, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	f.T.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

// line waits (at most d) for the helper's next stdout line.
func (p *helperProc) line(d time.Duration) (string, error) {
	select {
	case l, ok := <-p.lines:
		if !ok {
			return "", fmt.Errorf("the helper exited (%v)", p.cmd.Wait())
		}
		return l, nil
	case <-time.After(d):
		return "", fmt.Errorf("no line from the helper within %v", d)
	}
}

// openStore opens the fixture's handle store in this process (Go API).
func (f *fx) openStore() *host.Handles {
	f.T.Helper()
	store, err := host.OpenHandles(context.Background(), sharedApp, &host.HandleOptions{StateRoot: f.stateRoot()})
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { store.Close(context.Background()) })
	return store
}

// faultCrash: put loops of s's API, each SIGKILLed 0-5 ms (Go) or 0-20 ms
// after its first put; after each kill this process reads the handle: the
// value must be whole, written at the generation it reads back at, and the
// generation must never go back.
func faultCrash(t *testing.T, s *server) {
	f := newFx(t)
	ctx := context.Background()
	store := f.openStore()
	c, err := store.Create(ctx, "", crashValue(1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	f.seen(c.Handle)
	n, window := *killsSlow, 20*time.Millisecond
	if s.name == "go" {
		n, window = *kills, 5*time.Millisecond
	}
	last, bad, advanced := int64(1), 0, 0
	for i := 1; i <= n; i++ {
		p := f.startHelper(s, "putloop", "HANDLES_HANDLE="+c.Handle, "HANDLES_SEED="+strconv.Itoa(i))
		if l, err := p.line(60 * time.Second); err != nil || l != "ready" {
			t.Fatalf("put loop %d: %q, %v\nstderr:\n%s", i, l, err, f.Stderr)
		}
		time.Sleep(rand.N(window))
		p.cmd.Process.Kill()
		p.cmd.Wait()
		v, err := store.Get(ctx, c.Handle, "")
		if err != nil {
			t.Errorf("read after kill %d: %v", i, err)
			bad++
			continue
		}
		if why := checkCrashValue(v.Data, v.Generation); why != "" || v.Generation < last {
			t.Errorf("read after kill %d at generation %d (last read %d): %s", i, v.Generation, last, why)
			bad++
		}
		if v.Generation > last {
			advanced++
		}
		last = v.Generation
	}
	temps := 0
	entries, _ := os.ReadDir(f.handlesDir())
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			temps++
		}
	}
	t.Logf("%d kills: the generation advanced across %d of them, to %d; %d temporary files left", n, advanced, last, temps)
	outcome := "every read after a kill was whole, at the generation written inside it, and the generation never went back"
	if bad > 0 {
		outcome = fmt.Sprintf("%d of %d reads after a kill were wrong (see the test log)", bad, n)
	}
	lib := map[string]string{"go": "`host.OpenHandles`", "python": "`mcp_resume.HandleStore`", "typescript": "`HandleStore.open`"}
	addRow(s.lang, "H11", "SIGKILL during put",
		fmt.Sprintf("processes of the language's API (%s, %s, %s) loop get + put (expecting the generation read) of self-checking values (0-64 KiB, the generation inside), each SIGKILLed at a random instant after its first put (`-handles.kills`: Go %d, 0-5 ms; `-handles.kills-slow`: Python and TypeScript %d, 0-20 ms); the Go API reads after each kill",
			lib["go"], lib["python"], lib["typescript"], *kills, *killsSlow),
		result{Outcome: outcome, Seen: "no error on any read", Serving: "yes"})
}

// faultCAS: 2 processes × 8 threads of compare-and-set increments on one
// handle: two Go processes for Go, one Go and one Python (TypeScript:
// 8 concurrent async loops on one store) for the others. The final count
// equals the number of successful puts, and the generation that count + 1.
func faultCAS(t *testing.T, s *server) {
	f := newFx(t)
	ctx := context.Background()
	store := f.openStore()
	zero, _ := json.Marshal(casValue{})
	c, err := store.Create(ctx, "", zero)
	if err != nil {
		t.Fatal(err)
	}
	f.seen(c.Handle)
	goSrv := findServer(t, allLangs[0])
	vars := []string{"HANDLES_HANDLE=" + c.Handle, "HANDLES_THREADS=8", "HANDLES_OPS=" + strconv.Itoa(*casOps)}
	procs := []*helperProc{f.startHelper(goSrv, "cas", vars...), f.startHelper(s, "cas", vars...)}
	for _, p := range procs {
		if l, err := p.line(60 * time.Second); err != nil || l != "ready" {
			t.Fatalf("cas helper: %q, %v\nstderr:\n%s", l, err, f.Stderr)
		}
	}
	start := time.Now()
	for _, p := range procs {
		io.WriteString(p.stdin, "go\n")
	}
	var total, conflicts, failed int
	for i, p := range procs {
		l, err := p.line(3 * time.Minute)
		var rep casReport
		if err == nil {
			err = json.Unmarshal([]byte(l), &rep)
		}
		if err != nil {
			t.Fatalf("cas helper %d: %q, %v\nstderr:\n%s", i, l, err, f.Stderr)
		}
		if rep.Failed > 0 {
			t.Errorf("cas helper %d: %d errors, first: %q", i, rep.Failed, rep.Errors)
		}
		total, conflicts, failed = total+rep.Puts, conflicts+rep.Conflicts, failed+rep.Failed
	}
	v, err := store.Get(ctx, c.Handle, "")
	if err != nil {
		t.Fatal(err)
	}
	var final casValue
	json.Unmarshal(v.Data, &final)
	want := 2 * 8 * *casOps
	t.Logf("%d puts, %d conflicts in %v; final count %d at generation %d", total, conflicts, time.Since(start).Round(time.Millisecond), final.Count, v.Generation)
	outcome := fmt.Sprintf("all %d increments succeeded; the final count equals the number of successful puts and the generation is that + 1; every conflict named a newer generation, every read had count = generation - 1", want)
	if total != want || final.Count != int64(total) || v.Generation != int64(total)+1 || failed > 0 {
		t.Errorf("%d successful puts (want %d), final count %d at generation %d, %d errors", total, want, final.Count, v.Generation, failed)
		outcome = fmt.Sprintf("%d successful puts of %d, final count %d at generation %d, %d errors", total, want, final.Count, v.Generation, failed)
	}
	addRow(s.lang, "H12", "2 processes × 8 threads, compare-and-set on one handle",
		fmt.Sprintf("a Go process (`host.OpenHandles`) and a process of the language's API (for Go another Go process; TypeScript runs 8 concurrent async loops on one store), each 8 threads × %d successful increments (`-handles.cas-ops`) of `{\"count\": N}`: get, then put count + 1 expecting the generation read, again on conflict", *casOps),
		result{Outcome: outcome, Seen: "conflict (expected, retried)", Serving: "yes"})
}

// faultPrincipals: row H13, principals the store must refuse
// (invalid_principal: over 1024 bytes, or not valid UTF-8), through s's
// API; a principal of exactly 1024 bytes is accepted, and the handle the
// refused calls named still reads back with its own principal. (Over MCP
// a stdio server's principal is always "", so this row uses the API.)
func faultPrincipals(t *testing.T, s *server) {
	f := newFx(t)
	ctx := context.Background()
	store := f.openStore()
	c, err := store.Create(ctx, "", []byte(`{"notes":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	f.seen(c.Handle)
	p := f.startHelper(s, "principals", "HANDLES_HANDLE="+c.Handle)
	l, err := p.line(60 * time.Second)
	var codes []string
	if err == nil {
		err = json.Unmarshal([]byte(l), &codes)
	}
	if err != nil || len(codes) != 5 {
		t.Fatalf("principals helper: %q, %v\nstderr:\n%s", l, err, f.Stderr)
	}
	want := []string{"invalid_principal", "invalid_principal", "invalid_principal", "ok", "ok"}
	if !slices.Equal(codes, want) {
		t.Errorf("create(1025 bytes), create(not UTF-8), get(1025 bytes), create(1024 bytes), get(\"\") answered %q; want %q", codes, want)
	}
	serving := "yes"
	if codes[4] != "ok" {
		serving = "no: the handle no longer read back with its own principal"
	}
	addRow(s.lang, "H13", "Oversized and non-UTF-8 principals",
		"through the language's API (over MCP a stdio server's principal is always `\"\"`): create with a 1025-byte principal, create with one that is not valid UTF-8 (bytes `\\xff\\xfe` in Go, a lone surrogate in Python and TypeScript), get with a 1025-byte principal, create with exactly 1024 bytes, get with `\"\"`",
		result{Outcome: fmt.Sprintf("answered %s in turn", strings.Join(codes, ", ")), Seen: "invalid_principal", Serving: serving})
}
