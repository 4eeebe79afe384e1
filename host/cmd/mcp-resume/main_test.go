package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/host"
)

// whoamiJSON runs `whoami --json` in this process.
func whoamiJSON(t *testing.T, args ...string) host.Identity {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(append([]string{"whoami", "--json"}, args...), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got host.Identity
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return got
}

func TestWhoami(t *testing.T) {
	t.Setenv(host.EnvInstance, "")
	got := whoamiJSON(t)
	if len(got.Chain) == 0 {
		t.Fatalf("no chain in %+v", got)
	}
	if got.Error != "" {
		t.Skip("no identity here:", got.Error)
	}
	if got.PID == 0 || got.Stdio == "" || got.InstanceSuffix != "" || !strings.HasPrefix(got.TokenFile, fmt.Sprintf("token-%d-%s", got.PID, got.StartTime)) || got.StateDir != "" {
		t.Errorf("whoami = %+v", got)
	}
	inst := whoamiJSON(t, "--instance", "work", "--app", "some-app")
	if len(inst.InstanceSuffix) != 16 || !strings.HasSuffix(inst.TokenFile, "-"+inst.InstanceSuffix) || filepath.Base(inst.StateDir) != "some-app" {
		t.Errorf("whoami --instance work --app some-app = %+v", inst)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"whoami", "--instance", "work"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "instance suffix: "+inst.InstanceSuffix) {
		t.Errorf("whoami table (exit %d):\n%s", code, out.String())
	}
}

// list tells the live host's file from a gone one's; prune deletes the gone
// one's, labelled, and keeps the live one's.
func TestListPrune(t *testing.T) {
	me := whoamiJSON(t)
	if me.Error != "" {
		t.Skip("no identity here:", me.Error)
	}
	dir := filepath.Join(t.TempDir(), "app")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	live := fmt.Sprintf("token-%d-%s", me.PID, me.StartTime)
	gone := fmt.Sprintf("token-%d-%s", child.Process.Pid, me.StartTime)
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
	var listed []listed
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil || len(listed) != 2 {
		t.Fatalf("list = %s (%v)", out.String(), err)
	}
	status := map[string]host.HostState{}
	for _, f := range listed {
		status[f.Name] = f.Host
	}
	if status[live] != host.HostAlive || status[gone] != host.HostGone {
		t.Fatalf("list statuses = %v", status)
	}

	out.Reset()
	if code := run([]string{"prune", "--state-dir", dir}, &out, &errOut); code != 0 {
		t.Fatalf("prune exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "host gone") || !strings.Contains(out.String(), gone) {
		t.Errorf("prune output:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
		t.Errorf("prune kept the dead host's file (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, live)); err != nil {
		t.Errorf("prune removed the live host's file: %v", err)
	}
}

func TestReason(t *testing.T) {
	if got := reason(host.PrunedFile{Reason: host.ReasonAged, Host: host.HostUnknown}); got != "aged: older than 30 days, host unknown" {
		t.Errorf("aged label = %q", got)
	}
	if got := reason(host.PrunedFile{Reason: host.ReasonHostGone, Host: host.HostGone}); got != "host gone" {
		t.Errorf("gone label = %q", got)
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
