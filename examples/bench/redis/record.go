package main

// The floor's input: the EVALSHA commands the plugin sends for create, get
// (the "read" script) and put, recorded off the wire with Redis's MONITOR
// while a Go store runs, named by the scripts of plugin/internal/handles/
// redis.lua, and written to a JSON file that the Python and TypeScript
// benchmarks replay too. MONITOR sees exactly what the host sends, with no
// seam in the host or the plugin.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/mcp-resume/mcp-resume/plugin/luascripts"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

// Call is one recorded script call: EVALSHA Sha len(Keys) Keys... Args...
// Keys and arguments are any bytes (a sealed value is raw), so the JSON
// file carries each in base64 (callJSON), which JSON strings, UTF-8 only,
// could not carry as they are.
type Call struct {
	Sha  string
	Keys []string
	Args []string
}

// callJSON is Call in the JSON file: the keys and arguments in base64.
type callJSON struct {
	Sha  string   `json:"sha"`
	Keys [][]byte `json:"keys"`
	Args [][]byte `json:"args"`
}

// MarshalJSON writes c as callJSON.
func (c Call) MarshalJSON() ([]byte, error) {
	j := callJSON{Sha: c.Sha, Keys: make([][]byte, len(c.Keys)), Args: make([][]byte, len(c.Args))}
	for i, k := range c.Keys {
		j.Keys[i] = []byte(k)
	}
	for i, a := range c.Args {
		j.Args[i] = []byte(a)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads c from callJSON.
func (c *Call) UnmarshalJSON(b []byte) error {
	var j callJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = Call{Sha: j.Sha, Keys: make([]string, len(j.Keys)), Args: make([]string, len(j.Args))}
	for i, k := range j.Keys {
		c.Keys[i] = string(k)
	}
	for i, a := range j.Args {
		c.Args[i] = string(a)
	}
	return nil
}

// Recording is the JSON file: the scripts by name (sha and source, for
// SCRIPT LOAD on a server that lacks them) and the calls of each operation,
// one per handle, in the order the handles were created.
type Recording struct {
	Scripts map[string]Script `json:"scripts"`
	Create  []Call            `json:"create"`
	Read    []Call            `json:"read"`
	Put     []Call            `json:"put"`
}

// Script is one Lua script of redis.lua.
type Script struct {
	Sha string `json:"sha"`
	Src string `json:"src"`
}

// luaScripts reads the plugin's scripts (plugin/luascripts/scripts.lua,
// redis.lua stripped) and splits them as the plugin does, so a recorded
// EVALSHA is named by its script.
func luaScripts(path string) (map[string]Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]Script{}
	for name, sc := range luascripts.Split(string(b)) {
		out[name] = Script{Sha: sc.SHA1, Src: sc.Src}
	}
	return out, nil
}

// monitor collects the lines of MONITOR from redis-cli (go-redis's
// MonitorCmd shares its connection with the pool's health checks, which
// drop it mid-stream).
type monitor struct {
	cmd   *exec.Cmd
	lines chan string
}

func startMonitor(addr string) (*monitor, error) {
	host, port, _ := strings.Cut(addr, ":")
	m := &monitor{cmd: exec.Command(redistest.CLIBinary(), "-h", host, "-p", port, "monitor"), lines: make(chan string, 1<<16)}
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := m.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			m.lines <- sc.Text()
		}
		close(m.lines)
	}()
	return m, nil
}

// until returns the lines up to the one holding marker (an ECHO sent by
// the caller after the operations to collect), not including it.
func (m *monitor) until(marker string) ([]string, error) {
	var got []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-m.lines:
			if !ok {
				return nil, fmt.Errorf("redis-cli monitor ended before %q", marker)
			}
			if strings.Contains(l, marker) {
				return got, nil
			}
			got = append(got, l)
		case <-timeout:
			return nil, fmt.Errorf("MONITOR: no %q within 30 s", marker)
		}
	}
}

// ready returns once MONITOR is on: it runs echo (an ECHO of marker)
// every 100 ms until a line holds marker.
func (m *monitor) ready(echo func() error, marker string) error {
	for start := time.Now(); time.Since(start) < 30*time.Second; {
		if err := echo(); err != nil {
			return err
		}
		for wait := time.After(100 * time.Millisecond); ; {
			select {
			case l, ok := <-m.lines:
				if !ok {
					return fmt.Errorf("redis-cli monitor ended")
				}
				if strings.Contains(l, marker) {
					return nil
				}
				continue
			case <-wait:
			}
			break
		}
	}
	return fmt.Errorf("MONITOR not on within 30 s")
}

func (m *monitor) stop() {
	m.cmd.Process.Kill()
	m.cmd.Wait()
}

// parseMonitor splits a MONITOR line,
//
//	1700000000.123456 [0 127.0.0.1:50000] "evalsha" "ab12..." "2" "k1" ...
//
// into its client ("127.0.0.1:50000", or "lua" for a script's own
// commands) and its arguments, unquoted (MONITOR escapes as C does: \", \\,
// \n, \r, \t, \a, \b, \xHH, all of which strconv.Unquote reads).
func parseMonitor(line string) (client string, args []string, err error) {
	open := strings.IndexByte(line, '[')
	end := strings.IndexByte(line, ']')
	if open < 0 || end < open {
		return "", nil, fmt.Errorf("MONITOR line without [db client]: %.80q", line)
	}
	f := strings.Fields(line[open+1 : end])
	if len(f) == 2 {
		client = f[1]
	}
	rest := line[end+1:]
	for {
		i := strings.IndexByte(rest, '"')
		if i < 0 {
			return client, args, nil
		}
		j := i + 1
		for j < len(rest) && rest[j] != '"' {
			if rest[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(rest) {
			return "", nil, fmt.Errorf("MONITOR line with an unclosed quote: %.80q", line)
		}
		a, err := strconv.Unquote(rest[i : j+1])
		if err != nil {
			return "", nil, fmt.Errorf("MONITOR argument %.40q: %v", rest[i:j+1], err)
		}
		args = append(args, a)
		rest = rest[j+1:]
	}
}

// calls keeps the EVALSHA calls of script sha among MONITOR lines, those
// the host sent (not the commands a script runs, not the EVAL retried
// after NOSCRIPT: the plugin's first EVALSHA of a script on a fresh server
// answers NOSCRIPT and is sent again as EVAL; its EVALSHA is counted).
func calls(lines []string, sha string) ([]Call, error) {
	var out []Call
	for _, l := range lines {
		client, a, err := parseMonitor(l)
		if err != nil {
			return nil, err
		}
		if client == "lua" || len(a) < 3 || !strings.EqualFold(a[0], "evalsha") || a[1] != sha {
			continue
		}
		n, err := strconv.Atoi(a[2])
		if err != nil || n < 0 || 3+n > len(a) {
			return nil, fmt.Errorf("EVALSHA with a bad key count: %.80q", l)
		}
		out = append(out, Call{Sha: sha, Keys: a[3 : 3+n], Args: a[3+n:]})
	}
	return out, nil
}

func (r *Recording) write(path string) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// evalArgs turns a recorded call's arguments into go-redis's []any.
func (c *Call) evalArgs() []any {
	a := make([]any, len(c.Args))
	for i, s := range c.Args {
		a[i] = s
	}
	return a
}

// floorClient is go-redis configured as hostfuncs/redishost configures the
// Go host's client: no retries, RESP2, no CLIENT SETINFO, the context's
// deadline bounding each command; the pool at go-redis's default size.
func floorClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	opt.MaxRetries, opt.DialerRetries = -1, 1
	opt.ContextTimeoutEnabled, opt.Protocol, opt.DisableIdentity = true, 2, true
	return redis.NewClient(opt), nil
}

// replay runs one recorded call with EVALSHA under the store's deadline
// and checks the script's status ("ok").
func replay(c *redis.Client, call *Call, deadline time.Duration) error {
	return replayCall(c, call, deadline, false)
}

// replayPut is replay for a recorded put (the put script's call): see
// rewind.
func replayPut(c *redis.Client, call *Call, deadline time.Duration) error {
	return replayCall(c, call, deadline, true)
}

func replayCall(c *redis.Client, call *Call, deadline time.Duration, put bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var v []any
	var err error
	if rewind, ok := call.rewind(); put && ok {
		// A put is sealed for the generation it makes (put's ARGV[9]): once
		// it has run, the same call again is "stale" and writes nothing.
		// Setting the record back to the generation before it, in the same
		// round trip, makes every replay do the recorded put's work.
		pipe := c.Pipeline()
		pipe.HSet(ctx, rewind.key, "g", rewind.generation)
		eval := pipe.EvalSha(ctx, call.Sha, call.Keys, call.evalArgs()...)
		if _, err = pipe.Exec(ctx); err == nil {
			v, err = eval.Slice()
		}
	} else {
		v, err = c.EvalSha(ctx, call.Sha, call.Keys, call.evalArgs()...).Slice()
	}
	if err != nil {
		return err
	}
	if len(v) == 0 || v[0] != "ok" {
		return fmt.Errorf("script answered %v", v)
	}
	return nil
}

// rewind is the record a recorded put writes and the generation it was at
// before: the put script's ARGV[5] is the key hash, ARGV[9] the generation
// its value was sealed as, and the record's key is KEYS[1] (the bucket's
// LRU set, ending in "lru") with "h:" and the key hash in place of "lru"
// (redis.lua, key). ok is false when c does not have put's shape.
func (c *Call) rewind() (r struct {
	key        string
	generation int64
}, ok bool) {
	// Put's arguments are the prelude's three, then tag, key hash, sealed
	// value, size, expected generation and sealed generation.
	if len(c.Args) != 9 || len(c.Keys) == 0 || !strings.HasSuffix(c.Keys[0], "lru") {
		return r, false
	}
	g, err := strconv.ParseInt(c.Args[8], 10, 64)
	if err != nil || g < 2 {
		return r, false
	}
	r.key = strings.TrimSuffix(c.Keys[0], "lru") + "h:" + c.Args[4]
	r.generation = g - 1
	return r, true
}
