// Command broker runs the demo token broker of mcp-resume: an in-memory HTTP
// service on loopback that issues MCP sessions as tokens, rotates a
// session's token on every resume, and keeps notes per session. The example
// MCP servers in Go, Python and TypeScript and the end-to-end tests use it.
//
// Usage:
//
//	go run ./examples/broker [-addr 127.0.0.1:0] [-token-ttl 24h] [-allow-remote]
//
// Flags:
//
//	-addr host:port    address to listen on; port 0 picks a free port
//	                   (default 127.0.0.1:0)
//	-token-ttl d       how long a token stays valid without use, as a Go
//	                   duration such as 90m or 24h (default 24h)
//	-allow-remote      allow a non-loopback -addr; the broker has no TLS and
//	                   no access control, so this exposes every session
//
// Once listening it prints exactly one line to stdout,
//
//	broker listening on http://127.0.0.1:PORT
//
// and nothing else; programs that start the broker read that line to learn
// the base URL. Logs go to stderr; they identify tokens by a short SHA-256
// prefix and never contain a token. SIGINT or SIGTERM shuts the broker down
// gracefully and it exits 0; bad flags exit 2; other failures exit 1.
//
// The protocol is specified in README.md next to this file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/broker/broker"
)

// Timeouts of the HTTP server.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	shutdownTimeout   = 5 * time.Second
)

// Errors of run.
var (
	// errUsage is returned when the command line is invalid.
	errUsage = errors.New("invalid command line")

	// errNotLoopback is returned when -addr is not a loopback address and
	// -allow-remote is not given.
	errNotLoopback = errors.New("not a loopback address; the broker is a demo without TLS or access control, pass -allow-remote to listen on it anyway")
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default handling so a second one
	// kills a broker that is slow to shut down.
	context.AfterFunc(ctx, stop)

	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "broker:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "broker:", err)
		os.Exit(1)
	}
}

// run parses args (without the program name), serves the broker until ctx
// is done, then shuts it down gracefully. It writes the "broker listening
// on" line to stdout and the usage text and logs to stderr. It returns nil
// after a clean shutdown, flag.ErrHelp for -h, an error wrapping errUsage for
// a bad command line, one wrapping errNotLoopback for a refused address, or
// the listen or serve error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "`host:port` to listen on; port 0 picks a free port")
	ttl := fs.Duration("token-ttl", broker.DefaultTokenTTL, "how long a token stays valid without use")
	allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback -addr (no TLS, no access control: demo only)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q; the broker takes flags only", errUsage, fs.Args())
	}
	if *ttl <= 0 {
		return fmt.Errorf("%w: -token-ttl must be positive, got %s", errUsage, *ttl)
	}
	if !*allowRemote {
		if err := checkLoopback(*addr); err != nil {
			return err
		}
	}

	logger := slog.New(slog.NewTextHandler(stderr, nil))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	tcpAddr := ln.Addr().(*net.TCPAddr)
	// A host name that resolved to a non-loopback address is caught here.
	if !*allowRemote && !tcpAddr.IP.IsLoopback() {
		ln.Close()
		return fmt.Errorf("listen on %s: bound %s: %w", *addr, tcpAddr, errNotLoopback)
	}

	srv := &http.Server{
		Handler:           logRequests(logger, broker.New(&broker.Options{TokenTTL: *ttl, Logger: logger})),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	url := baseURL(tcpAddr)
	logger.Info("broker started", "url", url, "token_ttl", ttl.String())
	if _, err := fmt.Fprintf(stdout, "broker listening on %s\n", url); err != nil {
		srv.Close()
		return fmt.Errorf("announce address: %w", err)
	}

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("broker stopped")
	return nil
}

// checkLoopback returns nil if addr ("host:port") names a loopback host:
// "localhost" or a loopback IP literal. An empty host (all interfaces) and
// any other name or address give an error wrapping errNotLoopback.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: -addr %q: %v", errUsage, addr, err)
	}
	if host == "localhost" {
		return nil // net.Listen binds a loopback address; run checks it
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to listen on %q: %w", addr, errNotLoopback)
}

// baseURL returns the URL clients on this host use to reach a listener on
// addr. An unspecified address (0.0.0.0 or ::, possible with -allow-remote)
// is announced as 127.0.0.1.
func baseURL(addr *net.TCPAddr) string {
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// logRequests logs one record per request to logger: method, path, status,
// response bytes, duration and remote address. Headers, and so tokens, are
// never logged. Health checks are logged at debug level.
func logRequests(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		begin := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		level := slog.LevelInfo
		if r.URL.Path == "/healthz" {
			level = slog.LevelDebug
		}
		logger.Log(r.Context(), level, "request",
			"method", r.Method,
			"path", r.URL.Path,
			"status", rec.status,
			"bytes", rec.bytes,
			"duration", time.Since(begin),
			"remote", r.RemoteAddr)
	})
}

// statusRecorder remembers the status and body size of a response.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

// WriteHeader records code and passes it on.
func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Write records the body size and passes b on.
func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

// Unwrap returns the wrapped writer, for [http.ResponseController].
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
