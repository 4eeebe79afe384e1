//go:build linux && handles

package handles_test

// Row H9: the disk under the handle store is full. The state root is a
// 256 KiB tmpfs in a private mount namespace that the server enters with
// nsenter (which execs it, so the test stays its MCP host), filled until
// ENOSPC, the way the fault suite's fault 1 does it.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/internal/servertest"
	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

// newMountNS starts a private mount namespace (servertest.MountNS), or
// skips the row when this machine cannot.
func newMountNS(t *testing.T) *servertest.MountNS {
	t.Helper()
	if os.Geteuid() != 0 {
		skipRow(t, "a tmpfs in a mount namespace needs root")
	}
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipRow(t, tool+" is not on PATH")
		}
	}
	if out, err := exec.Command("unshare", "-m", "--propagation", "private", "true").CombinedOutput(); err != nil {
		skipRow(t, fmt.Sprintf("unshare -m does not work here: %v %s", err, out))
	}
	return servertest.StartMountNS(t)
}

func faultFullDisk(t *testing.T, s *server) {
	ns := newMountNS(t)
	f := newFx(t)
	ctx := context.Background()
	mnt := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(mnt, 0o700)
	ns.Run("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", mnt)
	f.StateDir = filepath.Join(mnt, "state", sharedApp)
	dir := ns.Path(f.handlesDir())
	srv := f.launch(ns.Argv(s.argv...))

	other := f.create(srv).Handle
	a := f.create(srv).Handle
	for h, note := range map[string]string{other: "keep me", a: "a1"} {
		if _, err := srv.NotebookAdd(ctx, h, note, 1); err != nil {
			t.Fatal(err)
		}
	}
	recsBefore := snapshot(dir)
	// A read refreshes the idle time on disk once it has moved by 1 s or
	// more: wait that long, so that the read below does want to write.
	time.Sleep(1100 * time.Millisecond)

	fill, err := os.OpenFile(ns.Path(filepath.Join(mnt, "fill")), os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for err == nil {
		_, err = fill.Write(chunk)
	}
	fill.Close()
	if !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("filling the tmpfs ended with %v, want ENOSPC", err)
	}

	_, errAdd := srv.NotebookAdd(ctx, a, "a2", 0)
	_, errCreate := srv.NotebookCreate(ctx)
	notes, gen, errRead := srv.NotebookRead(ctx, other)
	readOther := "the notes"
	if errRead != nil {
		readOther = mcphost.ErrorCode(errRead)
	} else if gen != 2 || !slices.Equal(notes, []string{"keep me"}) {
		readOther = fmt.Sprintf("wrong notes %q generation %d", notes, gen)
	}
	var temps []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			temps = append(temps, e.Name())
		}
	}
	left := "no temporary file left"
	if len(temps) > 0 {
		left = fmt.Sprintf("%d temporary files left", len(temps))
	}
	records := "the records unchanged"
	if recordLines(snapshot(dir)) != recordLines(recsBefore) {
		records = "a record changed"
	}
	_, errInfo := srv.SessionInfo(ctx)

	os.Remove(ns.Path(filepath.Join(mnt, "fill")))
	gen, errAfter := srv.NotebookAdd(ctx, a, "a3", 0)
	notesA, _, _ := srv.NotebookRead(ctx, a)
	recovered := "once space was freed, notebook_add succeeded (generation 3, notes a1 and a3)"
	if errAfter != nil || gen != 3 || !slices.Equal(notesA, []string{"a1", "a3"}) {
		recovered = fmt.Sprintf("once space was freed, notebook_add gave generation %d, %v, notes %q", gen, errAfter, notesA)
	}
	notes, gen, errRead = srv.NotebookRead(ctx, other)
	serving := "yes"
	if errInfo != nil {
		serving = "no: session_info on the full disk: " + errInfo.Error()
	} else if errRead != nil || gen != 2 || !slices.Equal(notes, []string{"keep me"}) {
		serving = fmt.Sprintf("no: another notebook read back %q generation %d, %v", notes, gen, errRead)
	}

	codeAdd, codeCreate := mcphost.ErrorCode(errAdd), mcphost.ErrorCode(errCreate)
	if codeAdd != "store_unavailable" || codeCreate != "store_unavailable" || len(temps) > 0 || records != "the records unchanged" || !strings.HasPrefix(recovered, "once space was freed, notebook_add succeeded") {
		t.Errorf("full disk: add %v, create %v, %s, %s, read of another notebook: %s; %s", errAdd, errCreate, left, records, readOther, recovered)
	}
	addRow(s.lang, "H9", "No space left on device",
		"state root on a 256 KiB tmpfs in a private mount namespace (server entered with `nsenter`), filled until ENOSPC after two notebooks were written",
		result{
			Outcome: fmt.Sprintf("notebook_add answered %s, notebook_create %s, %s and %s; reading another notebook answered %s; %s",
				codeAdd, codeCreate, records, left, readOther, recovered),
			Seen: distinct([]string{codeAdd, codeCreate}), Serving: serving})
}

// recordLines keeps the lines of a snapshot that describe record files.
func recordLines(snap string) string {
	var out []string
	for _, l := range strings.Split(snap, "\n") {
		if strings.HasPrefix(l, "h-") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
