package handles

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
	"github.com/mcp-resume/mcp-resume/plugin/internal/testhost"
)

func TestParseStateURL(t *testing.T) {
	good := []struct{ in, url, display string }{
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"redis://localhost", "redis://localhost", "redis://localhost"},
		{"rediss://me:s3cret@cache.example.com:6380/2", "rediss://me:s3cret@cache.example.com:6380/2", "rediss://me:***@cache.example.com:6380/2"},
		{"redis://:s3cret@[::1]:7000?cluster=true", "redis://:s3cret@[::1]:7000", "redis://:***@[::1]:7000?cluster=true"},
		{"redis://default@10.0.0.1:6379/", "redis://default@10.0.0.1:6379", "redis://default@10.0.0.1:6379"},
		{"redis://h:1/3?cluster=false", "redis://h:1/3", "redis://h:1/3"},
	}
	for _, g := range good {
		c, werr := parseStateURL(g.in, "state_url")
		if werr != nil || c.url != g.url || c.display != g.display {
			t.Errorf("parseStateURL(%q) = %+v, %v; want url %q display %q", g.in, c, werr, g.url, g.display)
		}
	}
	bad := []string{
		"", "localhost:6379", "http://me:s3cret@h/0", "redis://", "redis://me:s3cret@/0", "redis://h:0", "redis://h:65536",
		"redis://h:x", "redis://h/db", "redis://h/-1", "redis://h/0?timeout=1", "redis://h?cluster=true&x=1",
		"redis://h/2?cluster=true", "redis://h/0#frag", "redis://h o/0", "redis://h:6379:1", "redis://[zz]:1",
		"redis://me:s3cret@h/0?dial_timeout=3s", "redis://default:6379/s3cret@host:6379/0", "redis://default:6379/s3cret@host:6379/x",
		"redis://u:pa?s3cret=1@h/0", "redis://h/0?s3cret=1@x",
	}
	for _, b := range bad {
		_, werr := parseStateURL(b, "state_url")
		if werr == nil || werr.Code != hostfuncs.CodeInvalidOption {
			t.Errorf("parseStateURL(%q) = %v, want invalid_option", b, werr)
			continue
		}
		if strings.Contains(werr.Message, "s3cret") {
			t.Errorf("parseStateURL(%q) message quotes the password: %s", b, werr.Message)
		}
	}
}

// secretChars are the characters of FuzzParseStateURL's passwords: the
// ones a password may hold, the URL's delimiters among them.
const secretChars = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789/?:@%-._~!$&'()*+,;="

// FuzzParseStateURL builds state URLs around a password drawn at random
// (from the seed, so the fuzzer cannot place it elsewhere): scheme://,
// then before, the password, '@', then after. Whatever the shape, well
// formed or not (redis://default:6379/<password>@host:port/0 included), an
// error message never holds the password, and neither does the redacted
// form shown of a URL that parses when the password follows a ':'.
func FuzzParseStateURL(f *testing.F) {
	f.Add("redis", "default:", "host:6379/0", uint64(1))
	f.Add("redis", "default:6379/", "host:6379/0", uint64(2))
	f.Add("rediss", ":", "[::1]:7000?cluster=true", uint64(3))
	f.Add("redis", "me:", "h/0?dial_timeout=3s", uint64(4))
	f.Add("redis", "h/0?", "x", uint64(5))
	f.Add("http", "u:", "h:1/2", uint64(6))
	f.Add("redis", "default:", "h:1/x?cluster=true", uint64(7))
	f.Fuzz(func(t *testing.T, scheme, before, after string, seed uint64) {
		r := rand.New(rand.NewSource(int64(seed)))
		b := make([]byte, 12)
		for i := range b {
			b[i] = secretChars[r.Intn(len(secretChars))]
		}
		secret := string(b)
		raw := scheme + "://" + before + secret + "@" + after
		c, werr := parseStateURL(raw, "state_url")
		if werr != nil {
			if strings.Contains(werr.Message, secret) {
				t.Errorf("parseStateURL(%q): the message quotes the password %q: %s", raw, secret, werr.Message)
			}
			return
		}
		if strings.HasSuffix(before, ":") && !strings.ContainsAny(before, "/?@") && strings.Contains(c.display, secret) {
			t.Errorf("parseStateURL(%q): the display %q shows the password %q", raw, c.display, secret)
		}
	})
}

// redisStore opens a handle store of app on the conformance Redis.
func redisStore(t *testing.T, url, app string) (*Store, *testhost.Host) {
	t.Helper()
	h := testhost.New(t)
	useRedis(t, h)
	return openOn(t, h, map[string]any{"app": app, "state_url": url}).s, h
}

func call(t *testing.T, s *Store, export string, in map[string]any) (map[string]any, *hostfuncs.Error) {
	t.Helper()
	b, _ := json.Marshal(in)
	out, werr := s.Export(export, b)
	var o map[string]any
	_ = json.Unmarshal(out, &o)
	return o, werr
}

// Redis holds ciphertext, key hashes and integers: neither the value nor
// the principal nor the handle appears in any key or field.
func TestRedisSealedAtRest(t *testing.T) {
	rd := conformance.Redis(t)
	s, _ := redisStore(t, rd.URL, "sealed")
	value, principal := "the-secret-notebook-text", "alice@example.com"
	o, werr := call(t, s, "handle_create", map[string]any{"principal": principal, "value": base64.StdEncoding.EncodeToString([]byte(value))})
	if werr != nil {
		t.Fatal(werr)
	}
	handle := o["handle"].(string)
	ctx := context.Background()
	keys, _ := rd.Client().Keys(ctx, "*").Result()
	if len(keys) < 3 {
		t.Fatalf("keys %v, want a layout, a record and an LRU set at least", keys)
	}
	for _, k := range keys {
		dump, err := rd.Client().Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{value, principal, handle, handle[5:], base64.StdEncoding.EncodeToString([]byte(value))} {
			if strings.Contains(k, secret) || strings.Contains(dump, secret) {
				t.Errorf("key %s holds %q", k, secret)
			}
		}
	}
}

// Another app on the same Redis, given the handle, finds nothing; even a
// record copied under the other app's key fails to open (corrupt, removed),
// and the owner's record is untouched.
func TestRedisAnotherAppNeverReads(t *testing.T) {
	rd := conformance.Redis(t)
	a, _ := redisStore(t, rd.URL, "app-a")
	b, hb := redisStore(t, rd.URL, "app-b")
	o, werr := call(t, a, "handle_create", map[string]any{"principal": "alice", "value": "c2VjcmV0"})
	if werr != nil {
		t.Fatal(werr)
	}
	h := o["handle"]
	if _, werr := call(t, b, "handle_get", map[string]any{"handle": h, "principal": "alice"}); werr == nil || werr.Code != hostfuncs.CodeHandleNotFound {
		t.Fatalf("app-b get = %v, want handle_not_found", werr)
	}
	ctx := context.Background()
	keys, _ := rd.Client().Keys(ctx, "mcp-resume:{app-a:*}:h:*").Result()
	if len(keys) != 1 {
		t.Fatalf("app-a records %v, want 1", keys)
	}
	// Plant app-a's record where app-b would look for the same handle.
	raw, _ := ParseHandle(h.(string))
	kb := deriveKeys(raw, "app-b")
	b.redisBegin()
	target := b.redisKey(b.shardOf(kb.hash)) + "h:" + hashHex(kb.hash)
	fields, _ := rd.Client().HGetAll(ctx, keys[0]).Result()
	tb := kb.tag("alice")
	fields["t"] = hashHex(tb)
	if err := rd.Client().HSet(ctx, target, fields).Err(); err != nil {
		t.Fatal(err)
	}
	if _, werr := call(t, b, "handle_get", map[string]any{"handle": h, "principal": "alice"}); werr == nil || werr.Code != hostfuncs.CodeHandleNotFound {
		t.Fatalf("app-b get of a copied record = %v, want handle_not_found", werr)
	}
	if n, _ := rd.Client().Exists(ctx, target).Result(); n != 0 {
		t.Errorf("the copied record was not removed")
	}
	corrupt := false
	for _, l := range hb.Logs {
		corrupt = corrupt || l.Event == EventCorrupt
	}
	if !corrupt {
		t.Errorf("no handle_corrupt logged for the copied record")
	}
	if o, werr := call(t, a, "handle_get", map[string]any{"handle": h, "principal": "alice"}); werr != nil || o["value"] != "c2VjcmV0" {
		t.Errorf("app-a get after the copy = %v, %v", o, werr)
	}
}

// A server that refuses scripts (here an ACL user without EVAL and
// EVALSHA; Valkey without its Lua module answers an unknown command) makes
// every operation store_unavailable, saying what the store needs; the
// password stays out of the message.
func TestRedisScriptsRefused(t *testing.T) {
	rd := conformance.Redis(t)
	if _, err := rd.Do("ACL", "SETUSER", "noscripts", "on", ">s3cretpw", "~*", "+@all", "-eval", "-evalsha", "-script"); err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(rd.URL, "redis://", "redis://noscripts:s3cretpw@", 1)
	s, h := redisStore(t, url, "refused")
	_, werr := call(t, s, "handle_create", map[string]any{"principal": "alice", "value": "YQ=="})
	if werr == nil || werr.Code != hostfuncs.CodeStoreUnavailable || !strings.Contains(werr.Message, "EVALSHA") || strings.Contains(werr.Message, "s3cretpw") {
		t.Fatalf("create as a user without scripts = %v, want store_unavailable naming EVALSHA, without the password", werr)
	}
	for _, l := range h.Logs {
		if strings.Contains(l.Message+l.Detail, "s3cretpw") {
			t.Errorf("log line %+v holds the password", l)
		}
	}
}

// TestRedisMaxmemory: on a redis-server at its maxmemory with the policy
// noeviction, a create answers store_unavailable and writes nothing, so
// creates of 1 MiB values cannot grow the server past its limit; a read
// of a handle made before still answers. (Redis refuses a script's writes
// for memory only at its first write, and only when that command is one
// that may grow memory: each growing script starts with such a command.)
func TestRedisMaxmemory(t *testing.T) {
	const limit = 64 << 20
	rd := redistest.Start(t, redistest.Args("--maxmemory", "64mb", "--maxmemory-policy", "noeviction"))
	s, _ := redisStore(t, rd.URL+"/0", "oom")
	value := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", DefaultMaxValueBytes)))
	first, werr := call(t, s, "handle_create", map[string]any{"principal": "alice", "value": value})
	if werr != nil {
		t.Fatal(werr)
	}
	refused := 0
	for i := 0; i < 120; i++ {
		_, werr := call(t, s, "handle_create", map[string]any{"principal": "alice", "value": value})
		if werr == nil {
			continue
		}
		if werr.Code != hostfuncs.CodeStoreUnavailable || !strings.Contains(werr.Message, "OOM") {
			t.Fatalf("create %d: %v, want store_unavailable for OOM", i, werr)
		}
		refused++
	}
	used := usedMemory(t, rd)
	if refused < 50 || used > limit+4<<20 {
		t.Errorf("%d of 120 creates of 1 MiB refused, used_memory %d bytes; want most refused and at most the limit %d plus 4 MiB", refused, used, limit)
	}
	t.Logf("%d of 120 creates refused; used_memory %d bytes", refused, used)
	if _, werr := call(t, s, "handle_get", map[string]any{"handle": first["handle"], "principal": "alice"}); werr != nil {
		t.Errorf("get at maxmemory: %v", werr)
	}
	if _, werr := call(t, s, "handle_touch", map[string]any{"handle": first["handle"], "principal": "alice"}); werr != nil {
		t.Errorf("touch at maxmemory: %v", werr)
	}
	if _, werr := call(t, s, "handle_put", map[string]any{"handle": first["handle"], "principal": "alice", "value": value}); werr == nil || werr.Code != hostfuncs.CodeStoreUnavailable {
		t.Errorf("put at maxmemory: %v, want store_unavailable", werr)
	}
	if used := usedMemory(t, rd); used > limit+4<<20 {
		t.Errorf("used_memory %d bytes after the reads and the put", used)
	}
}

// usedMemory is the server's used_memory (INFO memory), in bytes.
func usedMemory(t *testing.T, rd *redistest.Server) int64 {
	t.Helper()
	info, err := rd.Client().Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatalf("no used_memory in %q", info)
	return 0
}

// On Redis the value is sealed with its generation: an older sealed value
// put back beside the current generation field, or a generation field
// moved away from its value, is refused (handle_not_found, the record
// removed, handle_rollback logged); the old value never returns. A value
// sealed in the first format (no generation) still opens; an unconditional
// put seals again when its first guess of the next generation is wrong.
func TestRedisRollbackRefused(t *testing.T) {
	rd := conformance.Redis(t)
	ctx := context.Background()
	s, h := redisStore(t, rd.URL, "rollback")
	b64 := func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }
	record := func(handle string) string {
		raw, _ := ParseHandle(handle)
		k := deriveKeys(raw, "rollback")
		return s.redisKey(s.shardOf(k.hash)) + "h:" + hashHex(k.hash)
	}
	rollbacks := func() int {
		n := 0
		for _, l := range h.Logs {
			if l.Event == EventRollback {
				n++
				if l.Level != hostfuncs.LevelWarn || strings.Contains(l.Detail, "old") || !strings.HasPrefix(l.Detail, "key=") {
					t.Errorf("rollback line %+v", l)
				}
			}
		}
		return n
	}
	for i, plant := range []string{"old value", "generation"} {
		o, werr := call(t, s, "handle_create", map[string]any{"principal": "alice", "value": b64("old")})
		if werr != nil {
			t.Fatal(werr)
		}
		handle := o["handle"].(string)
		key := record(handle)
		old, err := rd.Client().HGet(ctx, key, "v").Result()
		if err != nil {
			t.Fatal(err)
		}
		for g := 2; g <= 3; g++ {
			o, werr := call(t, s, "handle_put", map[string]any{"handle": handle, "principal": "alice", "value": b64("new")})
			if werr != nil || o["generation"] != float64(g) {
				t.Fatalf("put: %v, %v; want generation %d", o, werr, g)
			}
		}
		if plant == "old value" {
			err = rd.Client().HSet(ctx, key, "v", old).Err()
		} else {
			err = rd.Client().HSet(ctx, key, "g", "7").Err()
		}
		if err != nil {
			t.Fatal(err)
		}
		o, werr = call(t, s, "handle_get", map[string]any{"handle": handle, "principal": "alice"})
		if werr == nil || werr.Code != hostfuncs.CodeHandleNotFound {
			t.Fatalf("%s planted: get = %v, %v; want handle_not_found", plant, o, werr)
		}
		if n, _ := rd.Client().Exists(ctx, key).Result(); n != 0 {
			t.Errorf("%s planted: the record was not removed", plant)
		}
		if n := rollbacks(); n != i+1 {
			t.Errorf("%s planted: %d handle_rollback lines, want %d", plant, n, i+1)
		}
	}
	for _, l := range h.Logs {
		if l.Event == EventCorrupt {
			t.Errorf("a rollback logged as corrupt: %+v", l)
		}
	}

	// A value of the first format: nonce and ciphertext, no generation.
	o, werr := call(t, s, "handle_create", map[string]any{"principal": "alice", "value": b64("x")})
	if werr != nil {
		t.Fatal(werr)
	}
	handle := o["handle"].(string)
	raw, _ := ParseHandle(handle)
	k := deriveKeys(raw, "rollback")
	nonce := make([]byte, 12)
	sealed := gcm(k.seal).Seal(nonce, nonce, []byte("first format"), redisAAD("rollback", k.hash, k.tag("alice"), 0))
	if err := rd.Client().HSet(ctx, record(handle), "v", base64.StdEncoding.EncodeToString(sealed)).Err(); err != nil {
		t.Fatal(err)
	}
	o, werr = call(t, s, "handle_get", map[string]any{"handle": handle, "principal": "alice"})
	if werr != nil || o["value"] != b64("first format") || o["generation"] != float64(1) {
		t.Fatalf("get of a first-format value = %v, %v", o, werr)
	}
	// An unconditional put on a handle past generation 2 seals again.
	for g := 2; g <= 4; g++ {
		o, werr = call(t, s, "handle_put", map[string]any{"handle": handle, "principal": "alice", "value": b64("v" + strconv.Itoa(g))})
		if werr != nil || o["generation"] != float64(g) {
			t.Fatalf("put: %v, %v; want generation %d", o, werr, g)
		}
	}
	o, werr = call(t, s, "handle_get", map[string]any{"handle": handle, "principal": "alice"})
	if werr != nil || o["value"] != b64("v4") || o["generation"] != float64(4) {
		t.Fatalf("get after puts = %v, %v", o, werr)
	}
	v, _ := rd.Client().HGet(ctx, record(handle), "v").Result()
	if !strings.HasPrefix(v, redisSealed3) {
		t.Fatalf("a put wrote %q, not the current format", v[:min(len(v), 8)])
	}
	// A store written before values crossed as raw bytes holds format 2,
	// the same bytes in base64 after "v2.": it reads, and the next put
	// rewrites it in format 3.
	v2 := redisSealed2 + base64.StdEncoding.EncodeToString([]byte(strings.TrimPrefix(v, redisSealed3)))
	if err := rd.Client().HSet(ctx, record(handle), "v", v2).Err(); err != nil {
		t.Fatal(err)
	}
	o, werr = call(t, s, "handle_get", map[string]any{"handle": handle, "principal": "alice"})
	if werr != nil || o["value"] != b64("v4") || o["generation"] != float64(4) {
		t.Fatalf("get of a format-2 value = %v, %v", o, werr)
	}
	if _, werr = call(t, s, "handle_put", map[string]any{"handle": handle, "principal": "alice", "value": b64("v5")}); werr != nil {
		t.Fatal(werr)
	}
	if v, _ := rd.Client().HGet(ctx, record(handle), "v").Result(); !strings.HasPrefix(v, redisSealed3) {
		t.Errorf("the put after a format-2 value wrote %q, not format 3", v[:min(len(v), 8)])
	}
}

// Unconditional puts from several stores at once on one handle all succeed
// (the last writer wins) though each seals its value for a generation it
// must guess: a put that finds the generation moved seals again. Every put
// answers its own generation, and the last is the handle's.
func TestRedisConcurrentUnconditionalPuts(t *testing.T) {
	rd := conformance.Redis(t)
	const writers, puts = 4, 25
	stores := make([]*Store, writers)
	for i := range stores {
		stores[i], _ = redisStore(t, rd.URL, "unconditional")
	}
	o, werr := call(t, stores[0], "handle_create", map[string]any{"principal": "p", "value": "AA=="})
	if werr != nil {
		t.Fatal(werr)
	}
	handle := o["handle"]
	gens := make(chan float64, writers*puts)
	errs := make(chan error, writers*puts)
	done := make(chan struct{})
	for _, s := range stores {
		go func(s *Store) {
			defer func() { done <- struct{}{} }()
			for j := 0; j < puts; j++ {
				b, _ := json.Marshal(map[string]any{"handle": handle, "principal": "p", "value": "AQ=="})
				out, werr := s.Export("handle_put", b)
				if werr != nil {
					errs <- werr
					continue
				}
				var g hostfuncs.HandleGeneration
				_ = json.Unmarshal(out, &g)
				gens <- float64(g.Generation)
			}
		}(s)
	}
	for range stores {
		<-done
	}
	close(gens)
	close(errs)
	for err := range errs {
		t.Errorf("put: %v", err)
	}
	seen := map[float64]bool{}
	for g := range gens {
		if seen[g] || g < 2 || g > writers*puts+1 {
			t.Errorf("generation %v answered twice or out of range", g)
		}
		seen[g] = true
	}
	o, werr = call(t, stores[1], "handle_get", map[string]any{"handle": handle, "principal": "p"})
	if werr != nil || o["generation"] != float64(writers*puts+1) || o["value"] != "AQ==" {
		t.Fatalf("get after the puts = %v, %v; want generation %d", o, werr, writers*puts+1)
	}
}

// An unconditional put seals for the generation after the last one its
// store saw: one round trip (one put script) after its own create, get
// or put; two from a store that never saw the handle, whose guess is
// wrong.
func TestRedisUnconditionalPutRoundTrips(t *testing.T) {
	rd := conformance.Redis(t)
	a, ha := redisStore(t, rd.URL, "trips")
	b, hb := redisStore(t, rd.URL, "trips")
	count := func(h *testhost.Host) *int {
		n := new(int)
		eval := h.Eval
		h.Eval = func(r hostfuncs.EvalRequest) hostfuncs.EvalResponse {
			resp := eval(r)
			// A first EVALSHA answered noscript is followed by its EVAL:
			// count the script runs, not the attempts.
			if (r.SHA1 == scripts["put"].SHA1 || r.Script == scripts["put"].Src) && resp.Error == nil {
				*n++
			}
			return resp
		}
		return n
	}
	na, nb := count(ha), count(hb)
	o, werr := call(t, a, "handle_create", map[string]any{"principal": "p", "value": "AA=="})
	if werr != nil {
		t.Fatal(werr)
	}
	h := o["handle"]
	put := func(s *Store, want int) {
		t.Helper()
		o, werr := call(t, s, "handle_put", map[string]any{"handle": h, "principal": "p", "value": "AQ=="})
		if werr != nil || o["generation"] != float64(want) {
			t.Fatalf("put = %v, %v; want generation %d", o, werr, want)
		}
	}
	for g := 2; g <= 4; g++ {
		put(a, g)
	}
	if *na != 3 {
		t.Errorf("3 puts after a create on one store ran %d put scripts, want 3", *na)
	}
	put(b, 5)
	if *nb != 2 {
		t.Errorf("a put from a store that never saw the handle ran %d put scripts, want 2", *nb)
	}
	if _, werr := call(t, a, "handle_get", map[string]any{"handle": h, "principal": "p"}); werr != nil {
		t.Fatal(werr)
	}
	put(a, 6)
	if *na != 4 {
		t.Errorf("a put after a get ran %d put scripts in all, want 4", *na)
	}
}

// The first call of a fresh store instance may be a create into a bucket
// where its principal already holds handles (a server restarted, a new
// instance of the pool). Its quota per bucket must be the layout's, not
// zero: before, that create evicted every handle the principal held in
// the bucket and then failed (a Lua error after the evictions, which
// Redis does not undo).
func TestRedisFirstCreateOfAnInstanceKeepsTheOwnersHandles(t *testing.T) {
	rd := conformance.Redis(t)
	first, _ := redisStore(t, rd.URL, "fresh")
	var handles []string
	for range 3 {
		o, werr := call(t, first, "handle_create", map[string]any{"principal": "alice", "value": "dg=="})
		if werr != nil {
			t.Fatal(werr)
		}
		handles = append(handles, o["handle"].(string))
	}
	// Enough fresh instances that some first create lands in a bucket
	// alice holds (max_handles 10,000: 64 buckets).
	for i := range 64 {
		fresh, _ := redisStore(t, rd.URL, "fresh")
		if _, werr := call(t, fresh, "handle_create", map[string]any{"principal": "alice", "value": "dw=="}); werr != nil {
			t.Fatalf("first create of instance %d: %v", i, werr)
		}
	}
	for _, h := range handles {
		if _, werr := call(t, first, "handle_get", map[string]any{"handle": h, "principal": "alice"}); werr != nil {
			t.Errorf("a handle of alice after fresh instances' creates: %v", werr)
		}
	}
}
