package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

// The Redis half of the format (README.md, "Redis: the same cases on the
// second backend"): which backends a case runs on, the run's one
// redis-server, the redis action, state_url injection, message_excludes
// and logs_exclude.

// Backends returns the backends the case raw runs on, in order: its
// "backends" when given; else both for a handle case ("store": "handles")
// and the file backend alone for a resume case. It returns nil for a case
// that is not a JSON object (the runner then fails on it).
func Backends(raw []byte) []string {
	var c struct {
		Store    string   `json:"store"`
		Backends []string `json:"backends"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	switch {
	case len(c.Backends) > 0:
		return c.Backends
	case c.Store == "handles":
		return []string{hostfuncs.BackendFile, hostfuncs.BackendRedis}
	}
	return []string{hostfuncs.BackendFile}
}

// The run's redis-server: started by the first Redis call, stopped by
// StopRedis (a TestMain's).
var (
	redisOnce   sync.Once
	redisServer *redistest.Server
	redisErr    error
)

// Redis returns the run's redis-server (one per test binary, started on
// first use with redistest.Launch: a free loopback port, a temporary
// directory, no persistence), after FLUSHALL and SCRIPT FLUSH, as before
// every redis-mode case. Without redis-server it fails t when
// MCP_RESUME_REQUIRE_REDIS=1, else skips t saying so.
func Redis(t testing.TB) *redistest.Server {
	t.Helper()
	redisOnce.Do(func() { redisServer, redisErr = redistest.Launch() })
	if redisErr != nil {
		if redistest.Required() {
			t.Fatalf("redis-mode case: %v (%s=1 requires it)", redisErr, redistest.RequireEnv)
		}
		t.Skipf("SKIPPING redis-mode case: %v (set %s=1 to make this a failure)", redisErr, redistest.RequireEnv)
	}
	for _, cmd := range [][]string{{"FLUSHALL"}, {"SCRIPT", "FLUSH"}} {
		if _, err := redisServer.Do(cmd...); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	return redisServer
}

// StopRedis stops the run's redis-server, if Redis started one. For a
// TestMain, after m.Run.
func StopRedis() {
	if redisServer != nil {
		redisServer.Close()
	}
}

// RedisAction is the redis action: command sent once to srv with the
// fixture's own client (its reply and error reply ignored), or, with
// eachKey, once per key matching that glob (SCAN to the end) with every
// argument "$KEY" replaced by the key. It returns an error when no key
// matches eachKey (the case is wrong) or the server cannot be reached.
func RedisAction(srv *redistest.Server, eachKey string, command []string) error {
	if len(command) == 0 {
		return fmt.Errorf("redis action: no command")
	}
	if eachKey == "" {
		return doIgnoringReply(srv, command)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys []string
	iter := srv.Client().Scan(ctx, 0, eachKey, 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("redis action: SCAN %s: %v", eachKey, err)
	}
	if len(keys) == 0 {
		return fmt.Errorf("redis action: no key matches %q", eachKey)
	}
	for _, k := range keys {
		cmd := slices.Clone(command)
		for i := range cmd {
			if cmd[i] == "$KEY" {
				cmd[i] = k
			}
		}
		if err := doIgnoringReply(srv, cmd); err != nil {
			return err
		}
	}
	return nil
}

// doIgnoringReply sends cmd: an error reply is the case's business, a
// connection failure the runner's.
func doIgnoringReply(srv *redistest.Server, cmd []string) error {
	_, err := srv.Do(cmd...)
	if err != nil && !isReplyError(err) {
		return fmt.Errorf("redis action %v: %v", cmd, err)
	}
	return nil
}

func isReplyError(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) || errors.Is(err, redis.Nil)
}

// WithStateURL returns a handle case's open object for its redis run:
// open (or, when empty, def) with "state_url": url added unless it has one.
// A runner does not call it for a case that names $REDIS_URL itself
// (README.md: in its environment, say).
func WithStateURL(open json.RawMessage, def map[string]any, url string) (json.RawMessage, error) {
	o := map[string]any{}
	if len(open) == 0 || string(open) == "null" {
		for k, v := range def {
			o[k] = v
		}
	} else if err := json.Unmarshal(open, &o); err != nil {
		return nil, fmt.Errorf("open: %v", err)
	}
	if _, ok := o["state_url"]; !ok {
		o["state_url"] = url
	}
	return json.Marshal(o)
}

// Excludes reports a message_excludes or logs_exclude failure: "" when
// text is empty or none of haystacks holds it, else a description.
func Excludes(text string, haystacks ...string) string {
	if text == "" {
		return ""
	}
	for _, h := range haystacks {
		if strings.Contains(h, text) {
			return fmt.Sprintf("%q holds %q", h, text)
		}
	}
	return ""
}
