package redishost_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
	"github.com/mcp-resume/mcp-resume/hostfuncs/redishost"
)

// eval runs one request with a fresh-per-test cache and returns its JSON
// response (what a host answers), so tests pin the wire form too.
func eval(t *testing.T, c *redishost.Clients, req hostfuncs.EvalRequest) (hostfuncs.EvalResponse, string) {
	t.Helper()
	if req.Keys == nil {
		req.Keys = []string{}
	}
	if req.Args == nil {
		req.Args = []string{}
	}
	if req.TimeoutMS == 0 {
		req.TimeoutMS = 5000
	}
	resp := c.Eval(context.Background(), req)
	b, err := resp.EncodeJSON()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func newClients(t *testing.T) *redishost.Clients {
	c := &redishost.Clients{}
	t.Cleanup(func() { c.Close() })
	return c
}

func wantCode(t *testing.T, resp hostfuncs.EvalResponse, js, code string) {
	t.Helper()
	if resp.Error == nil || resp.Error.Code != code {
		t.Fatalf("got %s, want error code %s", js, code)
	}
}

func TestReplyKinds(t *testing.T) {
	s := redistest.Start(t)
	c := newClients(t)
	for _, tc := range []struct{ script, want string }{
		{`return {1, 'a', false, {2, 'b\195\169'}, redis.status_reply('OK'), 3.7}`, `{"reply":[1,"a",null,[2,"bé"],"OK",3]}`},
		{`return nil`, `{"reply":null}`},
		{`return false`, `{"reply":null}`},
		{`return true`, `{"reply":1}`},
		{`return -9007199254740993`, `{"reply":-9007199254740992}`}, // a Lua double, truncated by Redis
		{`return {}`, `{"reply":[]}`},
		{`return ''`, `{"reply":""}`},
		{`return 'x\255y'`, "{\"reply\":\"x\ufffdy\"}"}, // bytes that are not UTF-8: U+FFFD
		{`return {redis.error_reply('E1 inner'), redis.pcall('HGET', 'nokey')}`, `{"reply":[{"err":"E1 inner"},{"err":"ERR `},
	} {
		_, js := eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: tc.script})
		if js != tc.want && !(strings.HasSuffix(tc.want, " ") && strings.HasPrefix(js, tc.want)) {
			t.Errorf("%s:\n got %s\nwant %s", tc.script, js, tc.want)
		}
	}
}

func TestKeysArgsAndEvalsha(t *testing.T) {
	s := redistest.Start(t)
	c := newClients(t)
	script := `return KEYS[1] .. '|' .. KEYS[2] .. '|' .. ARGV[1] .. '|' .. ARGV[2]`
	_, js := eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: script, Keys: []string{"k1", "k2"}, Args: []string{"a1", ""}})
	if js != `{"reply":"k1|k2|a1|"}` {
		t.Fatalf("EVAL: %s", js)
	}
	sha, err := s.Do("SCRIPT", "LOAD", script)
	if err != nil {
		t.Fatal(err)
	}
	_, js = eval(t, c, hostfuncs.EvalRequest{URL: s.URL, SHA1: sha.(string), Keys: []string{"x", "y"}, Args: []string{"1", "2"}})
	if js != `{"reply":"x|y|1|2"}` {
		t.Fatalf("EVALSHA: %s", js)
	}
}

func TestNoScript(t *testing.T) {
	s := redistest.Start(t)
	c := newClients(t)
	resp, js := eval(t, c, hostfuncs.EvalRequest{URL: s.URL, SHA1: strings.Repeat("0", 40)})
	wantCode(t, resp, js, hostfuncs.CodeNoScript)
	// EVAL caches the script: EVALSHA of its SHA-1 runs; SCRIPT FLUSH forgets it.
	eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: "return 7"})
	sha := "59b6ab2fbe0ee4b25733de0f62e6cda4899ef8e9"
	if _, js := eval(t, c, hostfuncs.EvalRequest{URL: s.URL, SHA1: sha}); js != `{"reply":7}` {
		t.Fatalf("EVALSHA after EVAL: %s", js)
	}
	if _, err := s.Do("SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	resp, js = eval(t, c, hostfuncs.EvalRequest{URL: s.URL, SHA1: sha})
	wantCode(t, resp, js, hostfuncs.CodeNoScript)
}

func TestScriptError(t *testing.T) {
	s := redistest.Start(t)
	c := newClients(t)
	if _, err := s.Do("SET", "k", "x"); err != nil {
		t.Fatal(err)
	}
	resp, js := eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: `return redis.call('HGET', KEYS[1], 'f')`, Keys: []string{"k"}})
	wantCode(t, resp, js, hostfuncs.CodeScript)
	if !strings.HasPrefix(resp.Error.Message, "WRONGTYPE ") {
		t.Errorf("message %q lost the server's prefix", resp.Error.Message)
	}
	resp, js = eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: `return redis.error_reply('no good')`})
	wantCode(t, resp, js, hostfuncs.CodeScript)
	if resp.Error.Message != "no good" {
		t.Errorf("message %q, want the error reply's text", resp.Error.Message)
	}
	resp, js = eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: `this is not lua`})
	wantCode(t, resp, js, hostfuncs.CodeScript)
	// The server (and the cached connection) keeps answering.
	if _, js := eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: `return redis.call('GET', KEYS[1])`, Keys: []string{"k"}}); js != `{"reply":"x"}` {
		t.Fatalf("after errors: %s", js)
	}
}

func TestInvalidRequestBeforeIO(t *testing.T) {
	// A listener that counts connections: an invalid request must make none.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepts atomic.Int32
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			conn.Close()
		}
	}()
	u := "redis://" + l.Addr().String()
	c := newClients(t)
	for name, req := range map[string]hostfuncs.EvalRequest{
		"both":         {URL: u, SHA1: strings.Repeat("0", 40), Script: "return 1", TimeoutMS: 2000},
		"neither":      {URL: u, TimeoutMS: 2000},
		"timeout 0":    {URL: u, Script: "return 1", TimeoutMS: 0},
		"timeout -1":   {URL: u, Script: "return 1", TimeoutMS: -1},
		"timeout big":  {URL: u, Script: "return 1", TimeoutMS: 60001},
		"no url":       {Script: "return 1", TimeoutMS: 2000},
		"sha1 upper":   {URL: u, SHA1: strings.Repeat("A", 40), TimeoutMS: 2000},
		"sha1 short":   {URL: u, SHA1: strings.Repeat("a", 39), TimeoutMS: 2000},
		"sha1 nonhex":  {URL: u, SHA1: strings.Repeat("g", 40), TimeoutMS: 2000},
		"scheme":       {URL: "http://" + l.Addr().String(), Script: "return 1", TimeoutMS: 2000},
		"unix":         {URL: "unix:///tmp/redis.sock", Script: "return 1", TimeoutMS: 2000},
		"not a url":    {URL: "redis://user:pw@[::1", Script: "return 1", TimeoutMS: 2000},
		"no host":      {URL: "redis:///0", Script: "return 1", TimeoutMS: 2000},
		"bad db":       {URL: u + "/x", Script: "return 1", TimeoutMS: 2000},
		"cluster bad":  {URL: "redis://[::1", Cluster: true, Script: "return 1", TimeoutMS: 2000},
		"cluster http": {URL: "http://" + l.Addr().String(), Cluster: true, Script: "return 1", TimeoutMS: 2000},
	} {
		resp := c.Eval(context.Background(), req)
		if resp.Error == nil || resp.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("%s: %+v, want invalid_request", name, resp)
			continue
		}
		if strings.Contains(resp.Error.Message, "pw@") || strings.Contains(resp.Error.Message, "[::1") {
			t.Errorf("%s: message quotes the URL: %q", name, resp.Error.Message)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := accepts.Load(); n != 0 {
		t.Fatalf("invalid requests made %d connections", n)
	}
}

func TestUnavailableWithinDeadline(t *testing.T) {
	// A port that was free a moment ago: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := newClients(t)
	for i := range 3 { // again and again: a cached client keeps answering fast
		start := time.Now()
		resp, js := eval(t, c, hostfuncs.EvalRequest{URL: "redis://someuser:s3cretpw@" + addr + "/0", Script: "return 1", TimeoutMS: 2000})
		took := time.Since(start)
		wantCode(t, resp, js, hostfuncs.CodeUnavailable)
		if took > time.Second {
			t.Errorf("call %d: refused connection took %v (deadline 2s): it should fail at once", i, took)
		}
		if strings.Contains(js, "s3cretpw") || strings.Contains(js, "someuser") {
			t.Fatalf("message quotes the URL's credentials: %s", js)
		}
	}
}

func TestTimeoutBusyScriptRunsOnce(t *testing.T) {
	s := redistest.Start(t)
	c := newClients(t)
	busy := `redis.call('INCR', KEYS[1]) local t = redis.call('TIME') local s = t[1]*1000000 + t[2]
		while true do local n = redis.call('TIME') if n[1]*1000000 + n[2] - s > 800000 then break end end return 1`
	start := time.Now()
	resp, js := eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: busy, Keys: []string{"ran"}, TimeoutMS: 150})
	took := time.Since(start)
	wantCode(t, resp, js, hostfuncs.CodeTimeout)
	if took < 150*time.Millisecond || took > 700*time.Millisecond {
		t.Errorf("timeout after %v, want 150ms..700ms", took)
	}
	// The script ran once: the host did not resend it after the timeout.
	_, js = eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: `return redis.call('GET', KEYS[1])`, Keys: []string{"ran"}, TimeoutMS: 5000})
	if js != `{"reply":"1"}` {
		t.Fatalf("counter after timeout: %s", js)
	}
}

// TestBusyIsUnavailable: while another client's script holds the server
// past its busy threshold, the server answers BUSY without running the
// script: unavailable (the contract's table), not script.
func TestBusyIsUnavailable(t *testing.T) {
	s := redistest.Start(t, redistest.Args("--lua-time-limit", "50"))
	c := newClients(t)
	busy := `local t = redis.call('TIME') local s = t[1]*1000000 + t[2]
		while true do local n = redis.call('TIME') if n[1]*1000000 + n[2] - s > 800000 then break end end return 1`
	resp, js := eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: busy, TimeoutMS: 150})
	wantCode(t, resp, js, hostfuncs.CodeTimeout)
	resp, js = eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: "return 2", TimeoutMS: 2000})
	wantCode(t, resp, js, hostfuncs.CodeUnavailable)
	if !strings.Contains(js, "BUSY") {
		t.Errorf("message lacks the server's BUSY: %s", js)
	}
}

func TestPasswordNeverInMessages(t *testing.T) {
	const pass = "Pa55-w0rd-xyzzy"
	s := redistest.Start(t, redistest.Password(pass))
	c := newClients(t)
	if _, js := eval(t, c, hostfuncs.EvalRequest{URL: s.URL, Script: "return 1"}); js != `{"reply":1}` {
		t.Fatalf("right password: %s", js)
	}
	for _, u := range []string{
		"redis://:wrong-" + pass + "@" + s.Addr,
		"redis://default:wrong-" + pass + "@" + s.Addr + "/0",
		"redis://nosuchuser:" + pass + "@" + s.Addr,
		"redis://" + s.Addr, // NOAUTH
	} {
		resp, js := eval(t, c, hostfuncs.EvalRequest{URL: u, Script: "return 1", TimeoutMS: 2000})
		wantCode(t, resp, js, hostfuncs.CodeAuth)
		if strings.Contains(js, pass) || strings.Contains(js, "nosuchuser") {
			t.Errorf("message quotes the URL's credentials: %s", js)
		}
		t.Logf("%s", js)
	}
}

// TestAuthRefused: a server without a password refuses a user it does not
// know (WRONGPASS): auth, not unavailable, and the message never quotes the
// credentials.
func TestAuthRefused(t *testing.T) {
	s := redistest.Start(t)
	c := newClients(t)
	for _, u := range []string{
		"redis://nosuchuser:s3cretpw@" + s.Addr + "/0",
		"redis://nosuchuser:s3cretpw@" + s.Addr,
	} {
		resp, js := eval(t, c, hostfuncs.EvalRequest{URL: u, Script: "return 1", TimeoutMS: 2000})
		wantCode(t, resp, js, hostfuncs.CodeAuth)
		if strings.Contains(js, "s3cretpw") || strings.Contains(js, "nosuchuser") {
			t.Errorf("message quotes the URL's credentials: %s", js)
		}
		t.Logf("%s", js)
	}
}

func TestReconnectAfterRestart(t *testing.T) {
	s := redistest.Start(t, redistest.AOFAlways())
	c := newClients(t)
	req := hostfuncs.EvalRequest{URL: s.URL, Script: `return redis.call('INCR', KEYS[1])`, Keys: []string{"n"}, TimeoutMS: 2000}
	if _, js := eval(t, c, req); js != `{"reply":1}` {
		t.Fatal(js)
	}
	s.Kill()
	resp, js := eval(t, c, req)
	wantCode(t, resp, js, hostfuncs.CodeUnavailable)
	s.Restart()
	// The client reconnects by itself (go-redis may answer its last dial
	// error for up to a second while it probes the address again).
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, js = eval(t, c, req)
		if resp.Error == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnect after restart: %s", js)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if js != `{"reply":2}` {
		t.Fatalf("after restart: %s", js)
	}
}

func TestCloseAndConcurrency(t *testing.T) {
	s := redistest.Start(t)
	c := &redishost.Clients{}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := c.Eval(context.Background(), hostfuncs.EvalRequest{URL: s.URL, Script: `return redis.call('INCR', KEYS[1])`,
				Keys: []string{"n"}, Args: []string{}, TimeoutMS: 10000})
			if resp.Error != nil {
				errs <- fmt.Sprint(i, resp.Error)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got, _ := s.Do("GET", "n"); got != "64" {
		t.Fatalf("64 concurrent INCRs gave %v", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	resp := c.Eval(context.Background(), hostfuncs.EvalRequest{URL: s.URL, Script: "return 1", TimeoutMS: 1000})
	if resp.Error == nil || resp.Error.Code != hostfuncs.CodeUnavailable {
		t.Fatalf("after Close: %+v", resp)
	}
	c.Close()
}

func TestClusterRouting(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := newClients(t)
	url := strings.TrimSuffix(cl.URL, "?cluster=true") // the plugin sends the URL without its query
	owners := map[string]bool{}
	for i := range 12 {
		key := fmt.Sprintf("mcp-resume:{app:%02x}:h:k", i)
		_, js := eval(t, c, hostfuncs.EvalRequest{URL: url, Cluster: true,
			Script: `redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[2])`,
			Keys:   []string{key, key + ":lru"}, Args: []string{"v"}})
		if js != `{"reply":null}` {
			t.Fatalf("%s: %s", key, js)
		}
		o := cl.Owner(key)
		if o == nil {
			t.Fatalf("no owner for %s", key)
		}
		owners[o.Addr] = true
		if got, err := o.Do("GET", key); err != nil || got != "v" {
			t.Fatalf("%s not on its slot's owner %s: %v %v", key, o.Addr, got, err)
		}
	}
	if len(owners) < 2 {
		t.Fatalf("12 hash tags all on one master (%v): routing untested", owners)
	}
	// EVALSHA goes to the owner too; a script cached on one node only is
	// NOSCRIPT on the others.
	sha := "59b6ab2fbe0ee4b25733de0f62e6cda4899ef8e9"
	for _, srv := range cl.Servers {
		if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
	}
	cached := map[string]bool{}
	for i := range 12 {
		key := fmt.Sprintf("{app:%02x}", i)
		owner := cl.Owner(key).Addr
		resp, js := eval(t, c, hostfuncs.EvalRequest{URL: url, Cluster: true, SHA1: sha, Keys: []string{key}})
		if cached[owner] {
			if js != `{"reply":7}` {
				t.Fatalf("EVALSHA on %s's owner, which cached it: %s", key, js)
			}
			continue
		}
		wantCode(t, resp, js, hostfuncs.CodeNoScript)
		eval(t, c, hostfuncs.EvalRequest{URL: url, Cluster: true, Script: "return 7", Keys: []string{key}})
		cached[owner] = true
		if got, _ := cl.Owner(key).Do("SCRIPT", "EXISTS", sha); fmt.Sprint(got) != "[1]" {
			t.Fatalf("EVAL for %s did not reach its owner %s: %v", key, owner, got)
		}
	}
	// Keys of two slots in one script: the server refuses (CROSSSLOT), a
	// script error, not a resend elsewhere.
	resp, js := eval(t, c, hostfuncs.EvalRequest{URL: url, Cluster: true, Script: "return redis.call('MGET', KEYS[1], KEYS[2])",
		Keys: []string{"{a}x", "{b}x"}})
	if resp.Error == nil {
		t.Fatalf("cross-slot keys: %s", js)
	}
	t.Logf("cross-slot: %s", js)
}
