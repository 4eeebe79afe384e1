package host_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/mcp-resume/mcp-resume/host"
)

// A server's startup (spec 000, MCP Server Startup): offer the stored token
// to the broker, reject it if refused, store the token the broker issues.
// Both stores run under the same MCP host (here: whatever started this
// program), so the second finds the first one's token.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	open := func() *host.Store {
		s, err := host.Open(ctx, "my-server", &host.Options{
			StateRoot: dir,
			Logger:    slog.New(slog.DiscardHandler),
			Instance:  host.NoInstance,
		})
		if err != nil {
			log.Println("no session resume:", err) // to stderr; serve anyway: a nil store is resume off
		}
		return s
	}

	first := open()
	token, ok := first.Load(ctx)
	fmt.Printf("first run: token %q, %v\n", token, ok)
	first.Store(ctx, "issued-by-broker-1") // the broker's fresh session token
	first.Close(ctx)

	relaunched := open()
	token, ok = relaunched.Load(ctx)
	fmt.Printf("relaunch: token %q, %v\n", token, ok)
	relaunched.Store(ctx, "issued-by-broker-2") // the broker rotates on resume
	relaunched.Close(ctx)
	// Output:
	// first run: token "", false
	// relaunch: token "issued-by-broker-1", true
}
