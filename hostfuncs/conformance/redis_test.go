package conformance

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

func TestBackends(t *testing.T) {
	for raw, want := range map[string][]string{
		`{"name":"x"}`:                                    {"file"},
		`{"store":"handles"}`:                             {"file", "redis"},
		`{"store":"handles","backends":["file"]}`:         {"file"},
		`{"backends":["redis"]}`:                          {"redis"},
		`{"store":"handles","backends":["redis","file"]}`: {"redis", "file"},
		`not json`: nil,
	} {
		if got := Backends([]byte(raw)); !reflect.DeepEqual(got, want) {
			t.Errorf("Backends(%s) = %v, want %v", raw, got, want)
		}
	}
}

func TestWithStateURL(t *testing.T) {
	def := map[string]any{"app": "conformance", "state_root": "/r/state"}
	for open, want := range map[string]string{
		``:                                     `{"app":"conformance","state_root":"/r/state","state_url":"redis://h:1/0"}`,
		`null`:                                 `{"app":"conformance","state_root":"/r/state","state_url":"redis://h:1/0"}`,
		`{"app":"a","idle_ttl_ms":5}`:          `{"app":"a","idle_ttl_ms":5,"state_url":"redis://h:1/0"}`,
		`{"app":"a","state_url":"rediss://x"}`: `{"app":"a","state_url":"rediss://x"}`,
	} {
		got, err := WithStateURL(json.RawMessage(open), def, "redis://h:1/0")
		if err != nil || !reflect.DeepEqual(DecodeJSON(got), DecodeJSON([]byte(want))) {
			t.Errorf("WithStateURL(%s) = %s, %v; want %s", open, got, err, want)
		}
	}
	if _, err := WithStateURL(json.RawMessage(`[1]`), def, "u"); err == nil {
		t.Error("an open that is not an object was accepted")
	}
}

func TestExcludes(t *testing.T) {
	if Excludes("", "anything") != "" || Excludes("pw", "a", "b") != "" || Excludes("pw", "a", "x pw y") == "" {
		t.Error("Excludes")
	}
}

// The redis action on the run's server: each_key visits every matching key
// with $KEY replaced; no matching key, and an unreachable server, are
// runner failures; an error reply is the case's business.
func TestRedisAction(t *testing.T) {
	srv := Redis(t)
	for _, k := range []string{"mcp-resume:{a:00}:h:1", "mcp-resume:{a:01}:h:2", "other"} {
		if err := RedisAction(srv, "", []string{"SET", k, "v"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := RedisAction(srv, "mcp-resume:*:h:*", []string{"SET", "$KEY", "garbage"}); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"mcp-resume:{a:00}:h:1": "garbage", "mcp-resume:{a:01}:h:2": "garbage", "other": "v"} {
		if got, _ := srv.Do("GET", k); got != want {
			t.Errorf("%s = %v, want %s", k, got, want)
		}
	}
	if err := RedisAction(srv, "nothing:*", []string{"DEL", "$KEY"}); err == nil {
		t.Error("each_key matching nothing was accepted")
	}
	if err := RedisAction(srv, "", []string{"HGET", "other", "f"}); err != nil {
		t.Errorf("an error reply failed the action: %v", err)
	}
	// Redis empties the server again for the next case.
	if srv2 := Redis(t); srv2 != srv {
		t.Fatal("a second server in one run")
	}
	if n, _ := srv.Do("DBSIZE"); n != int64(0) {
		t.Errorf("DBSIZE after Redis = %v, want 0 (FLUSHALL)", n)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	StopRedis()
	os.Exit(code)
}
