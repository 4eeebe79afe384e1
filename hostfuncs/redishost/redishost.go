// Package redishost runs the mcp_resume_eval host function for Go: one Lua
// script on a Redis or Valkey server through go-redis, with the contract's
// validation, deadline, reply conversion and error codes (hostfuncs/README.md,
// section "mcp_resume_eval").
//
// It lives beside the contract, not under host/, because two hosts run the
// same code: the Go host (host/internal/primitives, for host.Open and
// host.OpenHandles) and the plugin's native test host
// (plugin/internal/testhost). One implementation means the plugin's own
// tests exercise exactly what the Go host ships.
//
// The plugin writes every script and decides every key and argument; this
// package only carries them and holds no policy.
package redishost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// Clients is a cache of go-redis clients, one per (url, cluster) pair,
// created on the first Eval that names it and kept until Close: the "one
// client per store and URL" of the contract. A store owns one Clients and
// shares it between its plugin instances. It is safe for concurrent use.
// The zero value is ready to use.
type Clients struct {
	mu      sync.Mutex
	closed  bool
	clients map[clientKey]client
}

type clientKey struct {
	url     string
	cluster bool
}

// client is what Eval needs of *redis.Client and *redis.ClusterClient.
type client interface {
	Process(ctx context.Context, cmd redis.Cmder) error
	Close() error
}

// Close closes every client (their connections and background goroutines).
// Afterwards Eval answers unavailable. It is safe to call more than once.
func (c *Clients) Close() error {
	c.mu.Lock()
	clients := c.clients
	c.clients, c.closed = nil, true
	c.mu.Unlock()
	var errs []error
	for _, cl := range clients {
		errs = append(errs, cl.Close())
	}
	return errors.Join(errs...)
}

// get returns the client for (rawURL, cluster), creating it on first use.
// It answers a CodeInvalidRequest or CodeUnavailable error for a URL the
// client cannot use or a closed cache.
func (c *Clients) get(rawURL string, cluster bool) (client, *hostfuncs.Error) {
	key := clientKey{rawURL, cluster}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, &hostfuncs.Error{Code: hostfuncs.CodeUnavailable, Message: "the store is closed"}
	}
	if cl, ok := c.clients[key]; ok {
		return cl, nil
	}
	cl, err := newClient(rawURL, cluster)
	if err != nil {
		return nil, err
	}
	if c.clients == nil {
		c.clients = map[clientKey]client{}
	}
	c.clients[key] = cl
	return cl, nil
}

// Deadlines: each call's timeout_ms (a context deadline, at most
// hostfuncs.MaxEvalTimeoutMS) bounds it; these only cap a call whose context
// somehow has none.
const ioCap = time.Duration(hostfuncs.MaxEvalTimeoutMS) * time.Millisecond

// newClient builds a go-redis client for rawURL without any network I/O.
// Settings, each for a clause of the contract:
//   - MaxRetries -1 and each command marked NoRetry (noRetryCmd): never
//     resend a script that may have run;
//   - DialerRetries 1: one connection attempt per call, so a refused port
//     answers unavailable at once instead of spending the deadline;
//   - ContextTimeoutEnabled: timeout_ms, the context's deadline, bounds
//     connect, write and read;
//   - Protocol 2 and DisableIdentity: plain RESP2 replies, no CLIENT
//     SETINFO round trip (Redis 6.2 and Valkey lack it).
func newClient(rawURL string, cluster bool) (client, *hostfuncs.Error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return nil, &hostfuncs.Error{Code: hostfuncs.CodeInvalidRequest, Message: "url must be redis://[user:password@]host:port[/db] or rediss://..."}
	}
	if cluster {
		opt, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, badURL(u, err)
		}
		opt.MaxRetries, opt.DialerRetries = -1, 1
		opt.ContextTimeoutEnabled, opt.Protocol, opt.DisableIdentity = true, 2, true
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = ioCap, ioCap, ioCap
		return redis.NewClusterClient(opt), nil
	}
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, badURL(u, err)
	}
	opt.MaxRetries, opt.DialerRetries = -1, 1
	opt.ContextTimeoutEnabled, opt.Protocol, opt.DisableIdentity = true, 2, true
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = ioCap, ioCap, ioCap
	return redis.NewClient(opt), nil
}

// badURL words a URL go-redis refused without quoting it (url.Parse's
// errors quote the whole URL, password included).
func badURL(u *url.URL, err error) *hostfuncs.Error {
	return &hostfuncs.Error{Code: hostfuncs.CodeInvalidRequest, Message: "url is not one the Redis client accepts: " + scrub(u, err.Error())}
}

// noRetryCmd is a command go-redis must not resend after a failure that may
// have come after the server ran it (a timeout, a broken connection): the
// plugin decides what to do. MOVED and ASK redirects of a cluster, which
// the server answered without running anything, are still followed.
type noRetryCmd struct{ *redis.Cmd }

func (noRetryCmd) NoRetry() bool { return true }

// Eval runs req, hostfuncs.FnEval's request, and answers its response,
// following hostfuncs/README.md, "mcp_resume_eval":
//   - CodeInvalidRequest, before any network I/O: not exactly one of SHA1
//     and Script, a SHA1 that is not 40 lowercase hex digits, TimeoutMS
//     outside 1..hostfuncs.MaxEvalTimeoutMS, an empty URL or one that is
//     not redis:// or rediss://;
//   - Reply: the script's reply (nil as ReplyNull, integers, bulk and status
//     strings with bytes that are not UTF-8 left to the JSON encoder, which
//     writes U+FFFD; arrays; an error inside an array as ReplyError);
//   - CodeNoScript: EVALSHA named a script the server does not hold;
//   - CodeScript: another error reply, its text (prefix kept) as the message;
//   - CodeAuth: NOAUTH, WRONGPASS, or AUTH failing while connecting, the
//     server's text as the message;
//   - CodeUnavailable: refused, reset, DNS, TLS, LOADING, BUSY, CLUSTERDOWN,
//     READONLY, MASTERDOWN, TRYAGAIN, MOVED/ASK left after the redirects,
//     a closed cache, ctx cancelled;
//   - CodeTimeout: no reply within TimeoutMS (connecting included).
//
// Messages never hold the URL's user or password: go-redis's errors name
// the address only, and scrub removes both anyway. The request is sent at
// most once. ctx is the caller's (a host function's); TimeoutMS is applied
// on top of it.
func (c *Clients) Eval(ctx context.Context, req hostfuncs.EvalRequest) hostfuncs.EvalResponse {
	if msg := validate(req); msg != "" {
		return fail(hostfuncs.CodeInvalidRequest, msg)
	}
	cl, herr := c.get(req.URL, req.Cluster)
	if herr != nil {
		return hostfuncs.EvalResponse{Error: herr}
	}
	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	args := make([]any, 0, 3+len(req.Keys)+len(req.Args))
	if req.SHA1 != "" {
		args = append(args, "evalsha", req.SHA1)
	} else {
		args = append(args, "eval", req.Script)
	}
	args = append(args, len(req.Keys))
	for _, k := range req.Keys {
		args = append(args, k)
	}
	for _, a := range req.Args {
		args = append(args, a)
	}
	cmd := redis.NewCmd(ctx, args...)
	cl.Process(ctx, noRetryCmd{cmd})
	val, err := cmd.Result()
	if err == nil || errors.Is(err, redis.Nil) {
		return hostfuncs.EvalResponse{Reply: convert(val)}
	}
	u, _ := url.Parse(req.URL)
	code, msg := classify(ctx, err, timeout)
	return fail(code, scrub(u, msg))
}

// validate returns why req is not a valid request, or "".
func validate(req hostfuncs.EvalRequest) string {
	switch {
	case req.URL == "":
		return "url is required"
	case (req.SHA1 == "") == (req.Script == ""):
		return "exactly one of sha1 and script is required"
	case req.SHA1 != "" && !isSHA1(req.SHA1):
		return "sha1 must be 40 lowercase hex digits"
	case req.TimeoutMS < 1 || req.TimeoutMS > hostfuncs.MaxEvalTimeoutMS:
		return fmt.Sprintf("timeout_ms must be 1 to %d", hostfuncs.MaxEvalTimeoutMS)
	}
	return ""
}

func isSHA1(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

func fail(code, msg string) hostfuncs.EvalResponse {
	return hostfuncs.EvalResponse{Error: &hostfuncs.Error{Code: code, Message: msg}}
}

// convert turns go-redis's RESP2 reply value into a hostfuncs.Reply.
func convert(v any) hostfuncs.Reply {
	switch v := v.(type) {
	case nil:
		return hostfuncs.Reply{Kind: hostfuncs.ReplyNull}
	case int64:
		return hostfuncs.Reply{Kind: hostfuncs.ReplyInt, Int: v}
	case string:
		return hostfuncs.Reply{Kind: hostfuncs.ReplyString, Str: v}
	case []any:
		out := hostfuncs.Reply{Kind: hostfuncs.ReplyArray, Array: make([]hostfuncs.Reply, len(v))}
		for i, e := range v {
			out.Array[i] = convert(e)
		}
		return out
	case error: // a redis.Error inside an array
		return hostfuncs.Reply{Kind: hostfuncs.ReplyError, Str: v.Error()}
	default:
		// RESP2 has no other kind; a RESP3 reply would be a bug here.
		return hostfuncs.Reply{Kind: hostfuncs.ReplyString, Str: fmt.Sprint(v)}
	}
}

// unavailablePrefixes are the error replies that say the server cannot run
// anything now, not that the script failed (hostfuncs/README.md,
// "mcp_resume_eval", Errors): LOADING, BUSY (another client's script holds
// the server), CLUSTERDOWN, READONLY, MASTERDOWN, TRYAGAIN (a slot
// migrating), and a cluster's MOVED and ASK left over after go-redis's
// redirects: none of them ran the script.
var unavailablePrefixes = []string{"LOADING", "BUSY", "CLUSTERDOWN", "READONLY", "MASTERDOWN", "TRYAGAIN", "MOVED", "ASK"}

// authPrefixes are the error replies that refuse the URL's credentials:
// NOAUTH (a password is required and none was given) and WRONGPASS (a
// wrong user or password; Redis 6 and later, Valkey).
var authPrefixes = []string{"NOAUTH", "WRONGPASS"}

// authRefusal reports whether reply, an error reply to AUTH, refuses the
// credentials: NOAUTH, WRONGPASS, or a server older than 6's "ERR invalid
// password".
func authRefusal(reply string) bool {
	first, _, _ := strings.Cut(reply, " ")
	return contains(authPrefixes, first) || strings.Contains(strings.ToLower(reply), "invalid password")
}

// classify picks the error code of a failed call and its message.
func classify(ctx context.Context, err error, timeout time.Duration) (code, msg string) {
	text := err.Error()
	var rerr redis.Error
	if errors.As(err, &rerr) {
		// An error reply. go-redis wraps the failures of connecting as
		// "failed to authenticate: ..." (AUTH or HELLO: the server refused
		// the credentials, whatever its prefix) or "failed to initialize
		// connection options: ..." (AUTH, SELECT: judged by the reply).
		first, _, _ := strings.Cut(rerr.Error(), " ")
		if strings.HasPrefix(text, "failed to authenticate") || strings.HasPrefix(text, "failed to ") && authRefusal(rerr.Error()) {
			return hostfuncs.CodeAuth, text
		}
		if strings.HasPrefix(text, "failed to ") && !contains(authPrefixes, first) {
			return hostfuncs.CodeUnavailable, "the Redis server refused the connection: " + text
		}
		switch {
		case first == "NOSCRIPT":
			return hostfuncs.CodeNoScript, rerr.Error()
		case contains(authPrefixes, first):
			return hostfuncs.CodeAuth, rerr.Error()
		case contains(unavailablePrefixes, first):
			return hostfuncs.CodeUnavailable, "the Redis server cannot run scripts now: " + rerr.Error()
		}
		return hostfuncs.CodeScript, rerr.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, redis.ErrPoolTimeout) || isNetTimeout(err) || ctx.Err() == context.DeadlineExceeded {
		return hostfuncs.CodeTimeout, fmt.Sprintf("no reply from the Redis server within %v: %s", timeout, text)
	}
	if errors.Is(err, context.Canceled) {
		return hostfuncs.CodeUnavailable, "the call was cancelled: " + text
	}
	return hostfuncs.CodeUnavailable, "cannot reach the Redis server: " + text
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// scrub removes the URL's user and password from msg, in case a library
// ever quotes them: the contract forbids either in a message. A user name
// shorter than 3 bytes is left alone (replacing every "a" would garble the
// message, and so short a name guards nothing).
func scrub(u *url.URL, msg string) string {
	if u == nil || u.User == nil {
		return msg
	}
	if p, ok := u.User.Password(); ok && p != "" {
		msg = strings.ReplaceAll(msg, p, "***")
		if esc := url.QueryEscape(p); esc != p {
			msg = strings.ReplaceAll(msg, esc, "***")
		}
	}
	if name := u.User.Username(); len(name) >= 3 {
		msg = strings.ReplaceAll(msg, name, "***")
	}
	return msg
}
