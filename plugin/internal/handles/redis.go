package handles

// The Redis backend (plugin/README.md, "Handle store on Redis"): the same
// exports, inputs, outputs and errors as the file backend, with every
// operation one atomic Lua script of redis.lua run through the host's
// mcp_resume_eval. The plugin keeps the policy: keys, sealing, lifetimes,
// the cap, the scripts and what their replies mean; the host only carries
// a request to the server.

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
	"github.com/mcp-resume/mcp-resume/plugin/luascripts"
)

// Environment variables of the Redis backend, read from facts.env.
const (
	// EnvStateURL selects the Redis backend when handles_open has no
	// state_url.
	EnvStateURL = "MCP_RESUME_STATE_URL"
	// EnvTimeout is the deadline of each operation (Go duration syntax)
	// when handles_open has no timeout_ms.
	EnvTimeout = "MCP_RESUME_STATE_TIMEOUT"
)

// DefaultTimeoutMS is the Redis backend's default deadline per operation.
const DefaultTimeoutMS = 2000

// keyRoot starts every Redis key of the store.
const keyRoot = "mcp-resume:"

// scripts are the scripts of redis.lua by name, as the plugin embeds them
// (luascripts.Source: without comments).
var scripts = luascripts.Split(luascripts.Source)

// redisConn is where a Redis store's scripts run: the URL the host
// connects to (no query), whether it names a cluster node, and the URL
// safe to show (password as "***").
type redisConn struct {
	url, display string
	cluster      bool
	// gens holds the generation this instance last saw of recent handles,
	// the first guess of an unconditional put (redisPut): a table of 256
	// slots chosen by the key hash's second byte, a newer handle taking
	// its slot (6 KiB, no map code in the plugin). A wrong guess costs a
	// round trip, never a wrong write.
	gens [256]seenGen
}

// seenGen is a slot of redisConn.gens: a key hash and its generation.
type seenGen struct {
	hash [16]byte
	gen  int64
}

// saw notes generation gen of key hash h for the next unconditional put.
func (c *redisConn) saw(h [16]byte, gen int64) { c.gens[h[1]] = seenGen{h, gen} }

// guess is the generation an unconditional put of key hash h seals for:
// the one after the last seen, or 2 (a handle's first put) when its slot
// holds another handle.
func (c *redisConn) guess(h [16]byte) int64 {
	if e := &c.gens[h[1]]; e.hash == h && e.gen >= 1 {
		return e.gen + 1
	}
	return 2
}

// parseStateURL checks a state_url: redis:// or rediss://, optional
// user info, a host (a name, an IPv4 address or a bracketed IPv6 one), an
// optional port, an optional database number as the path, and at most the
// query cluster=true (then database 0). Errors are invalid_option and
// never quote the URL's user info. (Parsed here rather than with net/url,
// which links fmt and would more than quadruple the plugin's growth; the
// host's client library parses the URL again to connect.)
// option is the name the caller knows the option by (state_url, StateURL,
// stateUrl).
func parseStateURL(raw, option string) (redisConn, *hostfuncs.Error) {
	const want = "; give redis://[user:password@]host[:port][/db] or rediss://…, with ?cluster=true for a Redis Cluster node"
	bad := func(what string) (redisConn, *hostfuncs.Error) {
		return redisConn{}, optionErr(option + " " + what + want)
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme != "redis" && scheme != "rediss" {
		if ok && scheme != "" && len(scheme) < 16 && strings.Trim(scheme, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") == "" {
			return bad("has the scheme " + strconv.Quote(scheme))
		}
		return bad("is not a Redis URL")
	}
	if strings.ContainsAny(rest, "#\x00\t\n\r ") {
		return bad("holds a fragment, a space or a control character")
	}
	// The user info ends at the last '@' before the path or query. An '@'
	// after a '/' or '?' means a password holding one of them unencoded
	// (redis://default:6379/pa/ss@host): everything from there on may be
	// the password, so from here no message quotes the path or the query
	// unless it is plainly not user info.
	if i := strings.IndexAny(rest, "/?"); i >= 0 && strings.IndexByte(rest[i:], '@') >= 0 {
		return bad("has an '@' after a '/' or '?' (is a '/' or '?' of the password not percent-encoded as %2F or %3F?)")
	}
	rest, query, _ := strings.Cut(rest, "?")
	authority, db, _ := strings.Cut(rest, "/")
	userinfo, host := "", authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, host = authority[:i], authority[i+1:]
	}
	if !validHostPort(host) {
		return bad("has no valid host[:port]")
	}
	if n, err := strconv.Atoi(db); db != "" && (err != nil || n < 0 || db[0] == '+' || db[0] == '-') {
		return bad("has a path that is not a database number")
	}
	c := redisConn{}
	switch query {
	case "", "cluster=false":
	case "cluster=true":
		c.cluster = true
	default:
		name, _, _ := strings.Cut(query, "=")
		if len(name) == 0 || len(name) > 32 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
			return bad("has a query other than cluster=true")
		}
		return bad("has the query parameter " + strconv.Quote(name) + ": the only one allowed is cluster=true")
	}
	if c.cluster && db != "" && db != "0" {
		return redisConn{}, optionErr("a Redis Cluster has only database 0; " + option + " names another")
	}
	path := ""
	if db != "" {
		path = "/" + db
	}
	c.url = scheme + "://" + authority + path
	shown := userinfo
	if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
		shown = user + ":***"
	}
	if shown != "" {
		shown += "@"
	}
	c.display = scheme + "://" + shown + host + path
	if c.cluster {
		c.display += "?cluster=true"
	}
	return c, nil
}

// validHostPort reports whether hp is host[:port]: a host name or IPv4
// address ([A-Za-z0-9._-]+) or a bracketed IPv6 address, and a port of
// 1 to 65535.
func validHostPort(hp string) bool {
	host, port := hp, ""
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 2 || strings.Trim(hp[1:end], "0123456789abcdefABCDEF:.") != "" {
			return false
		}
		host, port = "", hp[end+1:]
		if port != "" && port[0] != ':' {
			return false
		}
		port = strings.TrimPrefix(port, ":")
	} else if i := strings.LastIndexByte(hp, ':'); i >= 0 {
		host, port = hp[:i], hp[i+1:]
		if host == "" {
			return false
		}
	}
	for i := 0; i < len(host); i++ {
		c := host[i] | 0x20 // lower case for letters
		if !(c >= 'a' && c <= 'z' || host[i] >= '0' && host[i] <= '9' || strings.IndexByte(".-_", host[i]) >= 0) {
			return false
		}
	}
	if hp == "" || strings.HasPrefix(hp, ":") {
		return false
	}
	if port == "" {
		return !strings.HasSuffix(hp, ":")
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535 && port[0] != '+'
}

// redisKey is the prefix of bucket n's keys: mcp-resume:{<app>:<bucket>}:.
// The braces make the app and bucket the hash tag (one Cluster slot).
func (s *Store) redisKey(n int) string {
	return keyRoot + "{" + s.set.App + ":" + s.shardName(n) + "}:"
}

// eval runs script name with keys and args: by EVALSHA, and by EVAL when
// the server answers noscript (a restart, SCRIPT FLUSH, another server).
// It sends mcp_resume_eval's binary form (hostfuncs/README.md), so keys,
// arguments and the reply's strings are raw bytes: a sealed value crosses
// as itself. Failures are store_unavailable (logged), worded from the
// host's code.
func (s *Store) eval(name string, keys, args []string) ([]hostfuncs.Reply, *hostfuncs.Error) {
	sc := scripts[name]
	req := hostfuncs.EvalRequest{URL: s.rd.url, Cluster: s.rd.cluster, SHA1: sc.SHA1, Keys: keys, Args: args, TimeoutMS: int(s.set.TimeoutMS)}
	reply, err := s.evalOnce(req)
	if code(err) == hostfuncs.CodeNoScript {
		req.SHA1, req.Script = "", sc.Src
		reply, err = s.evalOnce(req)
	}
	if err != nil {
		return nil, s.redisFailure(err)
	}
	if reply.Kind != hostfuncs.ReplyArray {
		return []hostfuncs.Reply{reply}, nil
	}
	return reply.Array, nil
}

// evalOnce sends req once: the reply, the host's *hostfuncs.Error, or an
// io error when the response does not follow the binary form.
func (s *Store) evalOnce(req hostfuncs.EvalRequest) (hostfuncs.Reply, error) {
	reply, herr, ok := hostfuncs.ParseEvalBinaryResponse(s.call(hostfuncs.FnEval, req.EncodeBinary()))
	switch {
	case !ok:
		return reply, &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: "host function " + hostfuncs.FnEval + " returned a malformed response"}
	case herr != nil:
		return reply, herr
	}
	return reply, nil
}

// redisFailure words a failed mcp_resume_eval for the store's caller: always
// store_unavailable (logged), with reason auth when the server refused the
// credentials. The URL is shown as display, its password as ***.
func (s *Store) redisFailure(err error) *hostfuncs.Error {
	at := "the Redis server " + s.rd.display
	msg := ""
	if werr, ok := err.(*hostfuncs.Error); ok {
		msg = werr.Message
	}
	switch code(err) {
	case hostfuncs.CodeAuth:
		// Its own reason, so that a caller tells a wrong password from a
		// server that is down: retrying or starting Redis will not help.
		e := s.unavailable(at + " refused the credentials (" + msg + "): check the user and password in the URL (state_url or MCP_RESUME_STATE_URL)")
		e.Reason = hostfuncs.ReasonAuth
		return e
	case hostfuncs.CodeUnavailable:
		return s.unavailable(at + " cannot be reached: " + msg + "; check that it runs and that MCP_RESUME_STATE_URL names it")
	case hostfuncs.CodeTimeout:
		return s.unavailable(at + " did not answer within " + msText(s.set.TimeoutMS) + " (a write may or may not have been applied); retry, or raise " + s.set.Names.Option("timeout_ms"))
	case hostfuncs.CodeScript:
		low := strings.ToLower(msg)
		if strings.Contains(low, "unknown command") || strings.Contains(low, "script") && (strings.Contains(low, "disabled") || strings.Contains(low, "engine")) {
			return s.unavailable(at + " cannot run Lua scripts (" + msg + "): the handle store needs EVAL and EVALSHA; enable scripting (on Valkey, the Lua module)")
		}
		if strings.HasPrefix(low, "noperm") {
			return s.unavailable(at + " refuses this user the scripts (" + msg + "): the handle store needs EVAL and EVALSHA; grant them (ACL SETUSER <user> +eval +evalsha)")
		}
		return s.unavailable(at + " answered an error: " + msg)
	case hostfuncs.CodeUnsupported:
		return s.unavailable("this host cannot reach Redis in the mode it runs the plugin: " + msg)
	}
	return s.unavailable("cannot run a script on " + at + ": " + err.Error())
}

// redisBegin reads the app's bucket count once per instance (the layout
// key, set by the first store of the app: as the file backend's layout
// file, so that stores opened with another max_handles find the records).
func (s *Store) redisBegin() *hostfuncs.Error {
	if !s.opened {
		return &hostfuncs.Error{Code: hostfuncs.CodeNotOpen, Message: "call handles_open before any other handle export"}
	}
	if s.ready {
		return nil
	}
	out, werr := s.eval("layout", []string{keyRoot + "{" + s.set.App + "}:layout"}, []string{strconv.Itoa(BucketsFor(s.set.MaxHandles))})
	if werr != nil {
		return werr
	}
	n, err := strconv.Atoi(out[0].Str)
	if err != nil || n < 1 || n > maxBuckets || n&(n-1) != 0 {
		return s.unavailable("the handle store's layout key on " + s.rd.display + " is corrupt (want a power of two up to 256); the records cannot be found without it: restore it, or delete the app's keys to start empty")
	}
	s.shards, s.ready = n, true
	s.perShard = max((s.set.MaxHandles+int64(n)-1)/int64(n), 1)
	s.perOwner = perShares(s.set.MaxHandlesPerPrincipal, n)
	return nil
}

// redisArgs are the arguments every bucket script starts with: now ("" for
// the server's clock), the tombstone period and the per-bucket cap.
func (s *Store) redisArgs(r *request, more ...string) []string {
	now := ""
	if r.in.NowSet {
		now = strconv.FormatInt(r.in.NowMS, 10)
	}
	return append([]string{now, strconv.FormatInt(s.set.TombstoneMS, 10), strconv.FormatInt(s.perShard, 10)}, more...)
}

// redisBucket runs a bucket script on bucket n and logs its events; the
// reply's status is out[0].Str, its own fields from out[1].
func (s *Store) redisBucket(name string, n int, args []string) ([]hostfuncs.Reply, *hostfuncs.Error) {
	p := s.redisKey(n)
	out, werr := s.eval(name, []string{p + "lru", p + "dead"}, args)
	if werr != nil {
		return nil, werr
	}
	if len(out) < 2 || out[0].Kind != hostfuncs.ReplyString {
		return nil, s.unavailable("the Redis server " + s.rd.display + " answered a script with something else than its reply; is it Redis 6.2 or later, or Valkey?")
	}
	for _, ev := range out[1].Array {
		s.logEvent(ev.Str)
	}
	return append(out[:1:1], out[2:]...), nil
}

// logEvent logs one event of a script's reply ("expired:<reason>:<hash>",
// "evicted:<hash>", "corrupt:<hash>") as the file backend does.
func (s *Store) logEvent(ev string) {
	kind, rest, _ := strings.Cut(ev, ":")
	reason, hash, _ := strings.Cut(rest, ":")
	if kind != "expired" {
		hash = rest
	}
	key := "key=" + hash[:min(12, len(hash))]
	switch kind {
	case "expired":
		s.log(hostfuncs.LevelInfo, EventExpired, MsgExpired, key+" reason="+reason)
	case "evicted":
		s.log(hostfuncs.LevelInfo, EventEvicted, MsgEvicted, key)
	case "corrupt":
		s.log(hostfuncs.LevelWarn, EventCorrupt, MsgCorrupt, key)
	}
}

// num is reply field i as an integer (0 when missing or not a number).
func num(out []hostfuncs.Reply, i int) int64 {
	if i >= len(out) {
		return 0
	}
	if out[i].Kind == hostfuncs.ReplyInt {
		return out[i].Int
	}
	n, _ := strconv.ParseInt(out[i].Str, 10, 64)
	return n
}

// redisHandle runs per-handle script name for r on its bucket and turns
// a refusal (not found, expired, evicted, conflict) into its error.
func (s *Store) redisHandle(name string, r *request, more ...string) ([]hostfuncs.Reply, *hostfuncs.Error) {
	if werr := s.redisBegin(); werr != nil {
		return nil, werr
	}
	args := s.redisArgs(r, append([]string{hex.EncodeToString(r.tag[:]), hashHex(r.hash)}, more...)...)
	out, werr := s.redisBucket(name, s.shardOf(r.hash), args)
	if werr != nil {
		return nil, werr
	}
	switch out[0].Str {
	case "ok", "stale":
		return out, nil
	case "conflict":
		return nil, s.conflictErr(r, num(out, 1))
	case "not_found":
		return nil, notFound()
	case "evicted":
		return nil, tombstoneErr(s.set.Names, stateEvicted, num(out, 1), num(out, 2))
	case "expired_idle":
		return nil, tombstoneErr(s.set.Names, stateExpiredIdle, num(out, 1), num(out, 2))
	case "expired_max_age":
		return nil, tombstoneErr(s.set.Names, stateExpiredMaxAge, num(out, 1), num(out, 2))
	}
	return nil, s.unavailable("the Redis server " + s.rd.display + " answered a script with the unknown status " + strconv.Quote(out[0].Str))
}

// The formats of a value sealed for Redis. The current one (3) is raw
// bytes: redisSealed3, the generation the value was written as (8 bytes,
// big-endian), a random nonce and the AES-256-GCM ciphertext. Format 2
// (stores written before mcp_resume_eval took raw bytes) is redisSealed2
// and the base64 of the same bytes; format 1 the base64 of the nonce and
// ciphertext alone, bound to no generation. 0x03, 'v' and base64 never
// meet in a first byte, so a reader tells them apart; a value is
// rewritten in format 3 by its next put.
const (
	redisSealed3 = "\x03"
	redisSealed2 = "v2."
)

// redisSeal seals value for r as generation gen, in format 3. The
// associated data (redisAAD) binds the app, the key hash, the principal
// tag and gen, so a value moved to another key, principal or generation
// fails to open.
func (s *Store) redisSeal(r *request, value []byte, gen int64) (string, *hostfuncs.Error) {
	var nonce [12]byte
	if !resume.ReadRandom(nonce[:]) {
		return "", s.unavailable("the guest's random source (WASI random_get) failed; nothing was written")
	}
	_, sealed, werr := s.cryptoOp(hostfuncs.SealRequest(&r.k.seal, &nonce, redisAAD(s.set.App, r.hash, r.tag, gen), value), "seal a value", len(value)+gcmTagLen)
	if werr != nil {
		return "", werr
	}
	b := append64(append(make([]byte, 0, 1+8+12+len(sealed)), redisSealed3...), gen)
	b = append(b, nonce[:]...)
	return string(append(b, sealed...)), nil
}

// redisAAD is the associated data of a value sealed for Redis as
// generation gen; gen 0 is the first format's, which bound no generation.
func redisAAD(app string, hash, tag [16]byte, gen int64) []byte {
	if gen == 0 {
		b := []byte("mcp-resume handle redis v1\x00" + app + "\x00")
		b = append(b, hash[:]...)
		return append(b, tag[:]...)
	}
	b := []byte("mcp-resume handle redis v2\x00" + app + "\x00")
	b = append(b, hash[:]...)
	b = append(b, tag[:]...)
	return append64(b, gen)
}

// redisOpen opens sealed value v of r: the value and the generation it
// was sealed as (0 for a value of the first format, which bound none);
// false when it does not open; store_unavailable when the host's crypto
// fails.
func (s *Store) redisOpen(r *request, v string) ([]byte, int64, bool, *hostfuncs.Error) {
	var b []byte
	bound := true // formats 2 and 3 carry the generation they bind
	if body, ok := strings.CutPrefix(v, redisSealed3); ok {
		b = []byte(body)
	} else {
		body, bound = strings.CutPrefix(v, redisSealed2)
		var err error
		if b, err = base64.StdEncoding.Strict().DecodeString(body); err != nil {
			return nil, 0, false, nil
		}
	}
	gen := int64(0)
	if bound {
		if len(b) < 8 {
			return nil, 0, false, nil
		}
		if gen = get64(b); gen < 1 {
			return nil, 0, false, nil
		}
		b = b[8:]
	}
	if len(b) < 12+gcmTagLen {
		return nil, 0, false, nil
	}
	var nonce [12]byte
	copy(nonce[:], b)
	status, out, werr := s.cryptoOp(hostfuncs.OpenRequest(&r.k.seal, &nonce, redisAAD(s.set.App, r.hash, r.tag, gen), b[12:]), "open a value", 0)
	if werr != nil || status != hostfuncs.CryptoStatusOK {
		return nil, 0, false, werr
	}
	if out == nil {
		out = []byte{}
	}
	return out, gen, true, nil
}

// redisCreate is Create on Redis: r carries the new handle's keys.
// owner is the principal's owner id (Store.tags).
func (s *Store) redisCreate(r *request, idle, maxAge int64, owner [ownerLen]byte) (int64, *hostfuncs.Error) {
	// The quota per bucket (perOwner) is known once the layout is read:
	// read it before the arguments are made, not inside redisHandle.
	if werr := s.redisBegin(); werr != nil {
		return 0, werr
	}
	sealed, werr := s.redisSeal(r, r.in.Value, 1)
	if werr != nil {
		return 0, werr
	}
	out, werr := s.redisHandle("create", r, sealed, strconv.Itoa(len(r.in.Value)), strconv.FormatInt(idle, 10), strconv.FormatInt(maxAge, 10),
		hex.EncodeToString(owner[:]), strconv.FormatInt(s.perOwner, 10))
	if werr != nil {
		return 0, werr
	}
	s.rd.saw(r.hash, 1)
	return num(out, 1), nil
}

// redisRead is Get (mode "get"), Touch ("touch") and Exists ("exists") on
// Redis. A value that does not open is removed as corrupt (handle_corrupt);
// one sealed as another generation than the record's is an older value
// put back (or a newer one beside an older generation): it is removed and
// logged as handle_rollback. Both answer handle_not_found, never the value.
func (s *Store) redisRead(r *request, mode string) (hostfuncs.HandleValue, *hostfuncs.Error) {
	out, werr := s.redisHandle("read", r, mode)
	if werr != nil {
		return hostfuncs.HandleValue{}, werr
	}
	v := hostfuncs.HandleValue{Value: []byte{}, Generation: num(out, 2), CreatedMS: num(out, 3), IdleTTLMS: num(out, 4), MaxAgeMS: num(out, 5)}
	s.rd.saw(r.hash, v.Generation)
	if mode != "get" {
		return v, nil
	}
	value, gen, ok, werr := s.redisOpen(r, out[1].Str)
	if werr != nil {
		return hostfuncs.HandleValue{}, werr
	}
	kind := "corrupt"
	if ok {
		// A first-format value bound no generation: it opens as it did.
		if gen == 0 || gen == v.Generation {
			v.Value = value
			return v, nil
		}
		kind = "rollback"
		s.log(hostfuncs.LevelWarn, EventRollback, MsgRollback, "key="+shortKey(r.hash)+" generation="+strconv.FormatInt(gen, 10)+" acknowledged="+strconv.FormatInt(v.Generation, 10))
	}
	if _, werr := s.redisBucket("corrupt", s.shardOf(r.hash), s.redisArgs(r, hashHex(r.hash), strconv.FormatInt(v.Generation, 10), kind)); werr != nil {
		return hostfuncs.HandleValue{}, werr
	}
	return hostfuncs.HandleValue{}, notFound()
}

// redisList is List on Redis: every bucket, one script each.
func (s *Store) redisList(r *request) (hostfuncs.HandleListOutput, *hostfuncs.Error) {
	if werr := s.redisBegin(); werr != nil {
		return hostfuncs.HandleListOutput{}, werr
	}
	out := hostfuncs.HandleListOutput{Handles: []hostfuncs.HandleEntry{}, Shards: int64(s.shards)}
	for n := 0; n < s.shards; n++ {
		rows, werr := s.redisBucket("list", n, s.redisArgs(r))
		if werr != nil {
			return hostfuncs.HandleListOutput{}, werr
		}
		now := num(rows, 1)
		for _, row := range rows[2:] {
			if len(row.Array) < 6 {
				continue
			}
			f := func(i int) int64 { return num(row.Array, i) }
			state := map[string]string{"l": hostfuncs.HandleLive, "i": hostfuncs.HandleExpiredIdle, "m": hostfuncs.HandleExpiredMaxAge, "e": hostfuncs.HandleEvicted}[row.Array[1].Str]
			key := row.Array[0].Str
			e := hostfuncs.HandleEntry{Key: key[:min(12, len(key))], State: state, AgeMS: max(now-f(2), 0), IdleMS: max(now-f(3), 0)}
			if state == hostfuncs.HandleLive {
				e.Generation, e.Size = f(4), f(5)
				out.Live++
				out.Bytes += e.Size
			} else {
				out.Tombstones++
			}
			out.Handles = append(out.Handles, e)
		}
	}
	return out, nil
}

// redisGC is GC on Redis: every bucket swept, one script each. Redis has
// no temporary files and, its scripts being atomic, no orphans.
func (s *Store) redisGC(r *request) (hostfuncs.HandleGCOutput, *hostfuncs.Error) {
	if werr := s.redisBegin(); werr != nil {
		return hostfuncs.HandleGCOutput{}, werr
	}
	var out hostfuncs.HandleGCOutput
	for n := 0; n < s.shards; n++ {
		c, werr := s.redisBucket("gc", n, s.redisArgs(r))
		if werr != nil {
			return hostfuncs.HandleGCOutput{}, werr
		}
		out.ExpiredIdle += num(c, 1)
		out.ExpiredMaxAge += num(c, 2)
		out.TombstonesDropped += num(c, 3)
		out.Live += num(c, 4)
	}
	return out, nil
}

// redisPutTries is how often an unconditional put on Redis at least seals
// its value again because another writer moved the generation in between;
// past it, it keeps trying until the store's deadline per operation
// (timeout_ms) has passed. Every "stale" answer means another writer's put
// landed, so the writers together always progress; the deadline, not a
// count, bounds how long one of them can keep losing.
const redisPutTries = 32

// redisPut is Put on Redis: the value sealed afresh as the generation it
// will have, written if the generation matches (when given). Without an
// expected generation the plugin cannot know the next one before the
// script runs: it seals for the generation after the last one this
// instance saw of the handle (2 when it saw none), and when the script
// answers that the handle is elsewhere ("stale", with the current
// generation) it seals again for the one after it.
func (s *Store) redisPut(r *request) (hostfuncs.HandleGeneration, *hostfuncs.Error) {
	next := s.rd.guess(r.hash)
	if r.in.GenerationSet {
		next = r.in.Generation + 1
	}
	start := time.Now().UnixMilli()
	for try := 0; try < redisPutTries || time.Now().UnixMilli()-start < s.set.TimeoutMS; try++ {
		sealed, werr := s.redisSeal(r, r.in.Value, next)
		if werr != nil {
			return hostfuncs.HandleGeneration{}, werr
		}
		out, werr := s.redisHandle("put", r, sealed, strconv.Itoa(len(r.in.Value)), expected(r), strconv.FormatInt(next, 10))
		if werr != nil {
			return hostfuncs.HandleGeneration{}, werr
		}
		if out[0].Str == "stale" {
			next = num(out, 1) + 1
			continue
		}
		s.rd.saw(r.hash, next)
		return hostfuncs.HandleGeneration{Generation: num(out, 1)}, nil
	}
	return hostfuncs.HandleGeneration{}, s.unavailable("the handle's generation changed under every unconditional put for " + msText(s.set.TimeoutMS) + " (other writers at the same time); nothing was written: retry")
}

// expected is r's expected generation as a script argument, "" for none.
func expected(r *request) string {
	if !r.in.GenerationSet {
		return ""
	}
	return strconv.FormatInt(r.in.Generation, 10)
}
