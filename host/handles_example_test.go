package host_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/mcp-resume/mcp-resume/host"
)

// A sessionless MCP server keeps a client's state under a handle: a create
// tool returns it, later calls pass it back with the caller (the principal:
// "" over stdio). A write that expects a generation another writer already
// moved on fails with ErrConflict and the current generation, and changes
// nothing.
func ExampleOpenHandles() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	hs, err := host.OpenHandles(context.Background(), "my-server", &host.HandleOptions{StateRoot: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Println("no handle store:", err) // to stderr; serve anyway: its tools answer store_unavailable
		return
	}
	defer hs.Close(context.Background())
	fmt.Printf("handles expire after %v idle, %v after creation\n", hs.Policy().IdleTTL, hs.Policy().MaxAge)

	c, _ := hs.Create(ctx, "", []byte(`{"notes":[]}`))
	v, _ := hs.Get(ctx, c.Handle, "")
	gen, _ := hs.Put(ctx, c.Handle, "", []byte(`{"notes":["first"]}`), host.IfGeneration(v.Generation))
	fmt.Println("generation", gen)

	_, err = hs.Put(ctx, c.Handle, "", []byte(`{"notes":["stale"]}`), host.IfGeneration(v.Generation))
	var he *host.Error
	if errors.Is(err, host.ErrConflict) && errors.As(err, &he) {
		fmt.Println("conflict: the handle is at generation", he.Generation)
	}
	_, err = hs.Get(ctx, c.Handle, "someone-else")
	fmt.Println("another principal:", errors.Is(err, host.ErrHandleNotFound))
	// Output:
	// handles expire after 24h0m0s idle, 720h0m0s after creation
	// generation 2
	// conflict: the handle is at generation 2
	// another principal: true
}
