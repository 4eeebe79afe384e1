package main

// Streamable HTTP mode (--http ADDR): the same tools as stdio, served at
// /mcp in the SDK's stateless mode (no Mcp-Session-Id: any replica answers
// any request), with bearer-token principals from MCP_EXAMPLE_PRINCIPALS.
// There is no MCP host parent to identify, so no resume store is opened;
// the handle store opens from the environment (MCP_RESUME_STATE_DIR, or
// MCP_RESUME_STATE_URL for Redis), which replicas share.

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/examples/broker/brokerclient"
	"github.com/mcp-resume/mcp-resume/host/mcpadapter"
)

// EnvPrincipals names the static bearer-token map of HTTP mode:
// "alice:<token>,bob:<token>". This server's setting, not the library's.
const EnvPrincipals = "MCP_EXAMPLE_PRINCIPALS"

// mcpScope is the one scope every known token carries; requiring it makes
// the SDK's middleware answer 401 with `WWW-Authenticate: Bearer scope="mcp"`.
const mcpScope = "mcp"

// httpAddr returns the address of a `--http ADDR` or `--http=ADDR` among
// args (the process's arguments, without the program), and whether one was
// given. Other arguments are left alone: the plugin takes them as the
// instance key in stdio mode. "--http" without a value is an error.
func httpAddr(args []string) (addr string, ok bool, err error) {
	for i, a := range args {
		switch {
		case a == "--http":
			if i+1 >= len(args) || args[i+1] == "" {
				return "", false, errors.New("--http needs an address, e.g. --http 127.0.0.1:0")
			}
			return args[i+1], true, nil
		case strings.HasPrefix(a, "--http="):
			if v := strings.TrimPrefix(a, "--http="); v != "" {
				return v, true, nil
			}
			return "", false, errors.New("--http needs an address, e.g. --http 127.0.0.1:0")
		}
	}
	return "", false, nil
}

// principals maps the SHA-256 of each token to its principal's name.
type principals map[[32]byte]string

// parsePrincipals reads MCP_EXAMPLE_PRINCIPALS: comma-separated name:token
// pairs, names and tokens non-empty, tokens without spaces and unique (a
// token names one principal). An empty s is nil (anonymous mode). The error
// never quotes a token.
func parsePrincipals(s string) (principals, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	p := principals{}
	for i, pair := range strings.Split(s, ",") {
		name, token, ok := strings.Cut(strings.TrimSpace(pair), ":")
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: entry %d is not name:token", EnvPrincipals, i+1)
		case name == "" || token == "":
			return nil, fmt.Errorf("%s: entry %d has an empty name or token", EnvPrincipals, i+1)
		case strings.ContainsAny(token, " \t\r\n"):
			return nil, fmt.Errorf("%s: the token of %q has white space", EnvPrincipals, name)
		}
		h := sha256.Sum256([]byte(token))
		if _, dup := p[h]; dup {
			return nil, fmt.Errorf("%s: the token of %q is also another principal's", EnvPrincipals, name)
		}
		p[h] = name
	}
	return p, nil
}

// verify is the SDK's auth.TokenVerifier over p: the principal's name as
// UserID (which mcpadapter.Principal gives the tools), or auth.ErrInvalidToken (HTTP 401). Every entry is compared, in
// constant time over equal-length digests, so timing tells nothing of
// which token (or how much of one) matched.
func (p principals) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	h := sha256.Sum256([]byte(token))
	name, found := "", false
	for k, v := range p {
		if subtle.ConstantTimeCompare(k[:], h[:]) == 1 {
			name, found = v, true
		}
	}
	if !found {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: name, Scopes: []string{mcpScope}}, nil // static tokens: no expiry
}

// httpShutdownWait bounds how long SIGTERM/SIGINT waits for requests in
// flight before the server closes their connections.
const httpShutdownWait = 5 * time.Second

// serveHTTP runs the MCP server on Streamable HTTP at http://addr/mcp until
// ctx ends (SIGTERM/SIGINT), then shuts down (nil: exit 0). It logs one
// "listening" line with url=http://<host>:<real port>/mcp on stderr. The
// broker session is optional here: without MCP_EXAMPLE_BROKER_URL the
// broker tools answer an error naming it, and the notebook tools work.
func serveHTTP(ctx context.Context, logger *slog.Logger, addr string, who principals) error {
	if who == nil {
		logger.Warn("HTTP mode without " + EnvPrincipals + ": every request runs as the anonymous principal \"\"")
	}
	logger.Info("HTTP mode: no MCP host parent to identify, so no session resume store; the handle store opens from the environment")
	s := &state{ready: make(chan struct{})}
	if brokerURL := os.Getenv(EnvBrokerURL); brokerURL != "" {
		s.broker = brokerclient.New(brokerURL, &http.Client{Timeout: brokerTimeout})
		bg := context.WithoutCancel(ctx)
		s.begin = func() {
			s.once.Do(func() {
				go func() {
					defer close(s.ready)
					s.session, s.err = establish(bg, nil, s.broker, logger)
					if s.err != nil {
						logger.Error("no broker session; broker tools will fail until restart", "error", s.err)
					}
				}()
			})
		}
	} else {
		s.err = errors.New(EnvBrokerURL + " is not set: this replica has no broker session")
		s.begin = func() { s.once.Do(func() { close(s.ready) }) }
	}
	s.begin()

	server := mcp.NewServer(serverInfo, nil)
	notes := &notebooks{server: server}
	// No resume store over HTTP; the handle store opens now, in the
	// background (stateless mode sees no per-client handshake).
	notes.a = mcpadapter.Attach(server, appName(), &mcpadapter.Options{NoResume: true, Logger: logger, OnHandlesOpen: notes.opened})
	defer notes.a.Close(context.Background())
	notes.a.Start()
	s.register(server)
	notes.register()
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, Logger: logger})
	if who != nil {
		h = auth.RequireBearerToken(who.verify, &auth.RequireBearerTokenOptions{Scopes: []string{mcpScope}, AllowMissingExpiration: true})(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	logger.Info("listening", "url", "http://"+ln.Addr().String()+"/mcp")
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), httpShutdownWait)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("requests still running at shutdown were cut", "error", err)
	}
	return nil
}
