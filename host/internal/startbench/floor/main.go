//go:build startbench

// Command floor is the floor of the startup benchmark
// (host/internal/startbench): the example Go server's startup with, instead
// of the mcp-resume plugin, a minimal go-pdk module (../floorguest, one
// export) opened exactly as package host opens the plugin (host/internal/
// loader: extism go-sdk on wazero, WASI, the eleven host functions, the same
// compilation cache and engines). It calls the export once and exits 0, as
// examples/bench/gostart (the server's startup) does after its first load
// answer.
//
// startbench builds it: the module is built into a temporary directory and
// embedded through `go build -overlay`, so no binary is committed; the build
// tag keeps `go vet ./...` and `go test ./...` away from the missing file.
//
// Environment: XDG_CACHE_HOME, as for the server (the default cache directory).
package main

import (
	"context"
	_ "embed"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/host/internal/loader"
	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
)

//go:embed floor.wasm
var floorWasm []byte

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The example server creates its MCP server first (examples/go-server,
	// examples/bench/gostart).
	_ = mcp.NewServer(&mcp.Implementation{Name: "mcp-resume-floor", Version: "0.1.0"}, nil)
	p, _, err := loader.Instance(ctx, floorWasm, "", nil)
	if err != nil {
		logger.Error("floor: loading", "error", err)
		os.Exit(1)
	}
	funcs := primitives.New(primitives.Config{Logger: logger})
	_, out, err := p.CallWithContext(primitives.NewContext(ctx, funcs), "run", []byte("floor"))
	if err != nil || len(out) != 64 {
		logger.Error("floor: run", "error", err, "output", string(out))
		os.Exit(1)
	}
	os.Exit(0)
}
