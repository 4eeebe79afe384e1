// Command gostart is the startup benchmark's stand-in for the Go example
// server (examples/go-server): the same startup, stopped at the point the
// benchmark measures, so the server itself carries no benchmark mode.
//
//	gostart load       the server's own startup (its MCP server object),
//	                   then host.Open and the first Load; exits 0 at the
//	                   Load answer, skipping teardown
//	gostart baseline   the server's own startup alone; exits 0
//
// host/internal/startbench launches it (`make bench-go`) and times spawn to
// exit. It opens the store exactly as the server does (app "example-go",
// or $EXAMPLE_APP; default options; logs on stderr), and writes nothing to
// stdout. Exit status 2 for an unknown mode. A store that cannot open is
// logged and the Load skipped, as the server serves without resume.
//
// Environment: what the server reads (MCP_RESUME, MCP_RESUME_STATE_DIR,
// XDG_CACHE_HOME, ...); no broker is needed, the benchmark stops before it.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/host"
)

func main() {
	mode := ""
	if len(os.Args) == 2 {
		mode = os.Args[1]
	}
	if mode != "load" && mode != "baseline" {
		fmt.Fprintln(os.Stderr, "usage: gostart load|baseline")
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// The server's own startup: its MCP server object, as examples/go-server
	// builds it before it serves.
	_ = mcp.NewServer(&mcp.Implementation{Name: "mcp-resume-example-go", Version: "0.1.0"}, nil)
	if mode == "baseline" {
		os.Exit(0)
	}
	app := os.Getenv("EXAMPLE_APP")
	if app == "" {
		app = "example-go"
	}
	ctx := context.Background()
	store, err := host.Open(ctx, app, &host.Options{Logger: logger})
	if err != nil {
		logger.Warn("session resume unavailable", "error", err)
	}
	// The measured point is the Load answer (a nil store answers at once).
	store.Load(ctx)
	os.Exit(0)
}
