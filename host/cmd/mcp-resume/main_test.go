package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/internal/resume"
	"github.com/mcp-resume/mcp-resume/internal/procid"
)

func TestWhoami_JSON(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"whoami", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got whoamiOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if got.Error == "" && (got.PID == 0 || got.Stdio == "" || got.TokenFile != resume.FileName(got.PID, got.StartTime, "")) {
		t.Errorf("whoami = %+v", got)
	}
	if len(got.Chain) == 0 {
		t.Errorf("no chain in %s", out.String())
	}
}

// prune deletes the file of a host that is gone and keeps the live one's.
func TestListPrune(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "app")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	me, err := procid.Lookup(os.Getpid())
	if err != nil {
		t.Skip("no process identity on this system:", err)
	}
	// A process that has exited: its pid and start time are gone.
	child := exec.Command("true")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	dead, err := procid.Lookup(child.Process.Pid)
	child.Wait()
	if err != nil {
		dead = procid.Process{PID: child.Process.Pid, StartTime: me.StartTime + "0"}
	}
	live, gone := resume.FileName(me.PID, me.StartTime, ""), resume.FileName(dead.PID, dead.StartTime, "")
	for _, n := range []string{live, gone} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("secret-token"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	var out, errOut bytes.Buffer
	if code := run([]string{"list", "--json", "--state-dir", dir}, &out, &errOut); code != 0 {
		t.Fatalf("list exit %d: %s", code, errOut.String())
	}
	if strings.Contains(out.String(), "secret-token") {
		t.Fatal("list printed a token")
	}
	var listed []fileStatus
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil || len(listed) != 2 {
		t.Fatalf("list = %s (%v)", out.String(), err)
	}
	status := map[string]string{}
	for _, f := range listed {
		status[f.File] = f.Host
	}
	if status[live] != "alive" || status[gone] != "gone" {
		t.Fatalf("list statuses = %v", status)
	}

	out.Reset()
	if code := run([]string{"prune", "--state-dir", dir}, &out, &errOut); code != 0 {
		t.Fatalf("prune exit %d: %s", code, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
		t.Errorf("prune kept the dead host's file (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, live)); err != nil {
		t.Errorf("prune removed the live host's file: %v", err)
	}
}

func TestRun_Usage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(nil, &out, &errOut); code != 2 {
		t.Errorf("no args: exit %d, want 2", code)
	}
	if code := run([]string{"bogus"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "unknown command") {
		t.Errorf("bogus: exit %d, stderr %q", code, errOut.String())
	}
}
