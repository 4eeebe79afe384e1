package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

// MONITOR's quoting (C escapes) comes back byte for byte, and a script's
// own commands are told apart by their "lua" client.
func TestParseMonitor(t *testing.T) {
	client, args, err := parseMonitor(`1795702694.303998 [0 127.0.0.1:55294] "evalsha" "ab\"c\\d\n\x01" "0" ""`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"evalsha", "ab\"c\\d\n\x01", "0", ""}; client != "127.0.0.1:55294" || !reflect.DeepEqual(args, want) {
		t.Fatalf("got %q %q, want 127.0.0.1:55294 %q", client, args, want)
	}
	lines := []string{
		`1.0 [0 lua] "evalsha" "s" "1" "k" "a"`,
		`1.0 [0 127.0.0.1:1] "evalsha" "t" "1" "k" "a"`,
		`1.0 [0 127.0.0.1:1] "EVALSHA" "s" "2" "k1" "k2" "a1" ""`,
	}
	got, err := calls(lines, "s")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Call{{Sha: "s", Keys: []string{"k1", "k2"}, Args: []string{"a1", ""}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls = %+v, want %+v", got, want)
	}
	if _, err := calls([]string{`1.0 [0 127.0.0.1:1] "evalsha" "s" "3" "k"`}, "s"); err == nil {
		t.Fatal("a key count beyond the arguments was accepted")
	}
}

// The recording the floors replay: a real store on a real redis-server
// sends exactly one EVALSHA per create, get and put (prepare stops the
// program otherwise), the calls replay by EVALSHA with status "ok", and the
// store still reads its handles after the floor's puts.
func TestRecordingReplays(t *testing.T) {
	srv = redistest.Start(t)
	*flagHandles = 4
	*flagLua = filepath.Join("..", "..", "..", "plugin", "luascripts", "scripts.lua")
	store := open(srv.URL)
	defer store.Close(context.Background())
	handles, rec := prepare(store)
	for name, sc := range rec.Scripts {
		if sc.Sha == "" || sc.Src == "" {
			t.Fatalf("script %s without sha or source", name)
		}
	}
	path := filepath.Join(t.TempDir(), "calls.json")
	if err := rec.write(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Recording
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(&back, rec) {
		t.Fatalf("the JSON file does not read back as written: %v", err)
	}
	floor, err := floorClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer floor.Close()
	for i := range handles {
		if err := replay(floor, &rec.Read[i], 2*time.Second); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if err := replayPut(floor, &rec.Put[i], 2*time.Second); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		got, err := store.Get(context.Background(), handles[i], "")
		if err != nil || len(got.Data) != *flagValue {
			t.Fatalf("store get after the floor's put: %d bytes, %v", len(got.Data), err)
		}
	}
}
