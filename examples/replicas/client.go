// Package replicas holds the tests of the handle store's Redis backend with
// real replicas: the Go, Python and TypeScript example servers in their
// stateless Streamable HTTP mode (--http), several at once on one Redis
// (or one Redis Cluster), driven by the official Go MCP SDK client with
// bearer tokens for the principals alice and bob. The tests are behind the
// build tag "replicas", so that the plain `go test ./...` of `make test-go`
// does not run them; `make test-replicas` (part of `make test`) does:
//
//	go test -tags replicas -count=1 ./examples/replicas/ -args -replicas.require
//
// and `make test-replicas-valkey` runs the same against Valkey.
//
// What runs (each test starts its own redis-server through
// hostfuncs/conformance/redistest, and its own servers):
//   - cross-replica: Python creates a notebook, Go adds, TypeScript adds,
//     Python reads generation 3, each through its own replica; bob gets
//     handle_not_found on every replica;
//   - concurrency: 3 replicas (one per language) × 8 clients doing
//     compare-and-set appends to one notebook;
//   - faults (rows R1… of docs/RELIABILITY.md, one column per language):
//     Redis SIGKILLed and restarted under load, unreachable, frozen,
//     SCRIPT FLUSH, garbage under a record key, stopped and restarted,
//     restarted without persistence, out of memory;
//   - cluster: the cross-replica and concurrency tests on a 3-master Redis
//     Cluster, and the app's keys spread over the masters.
//
// This file (no build tag) is the part the demo program
// (examples/demo-replicas) shares with the tests: a client of the example
// servers' notebook tools over Streamable HTTP with a bearer token. The
// tests start their replicas with examples/internal/servertest.StartHTTP.
package replicas

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

// Principals returns new random bearer tokens for alice and bob, and the
// MCP_EXAMPLE_PRINCIPALS value ("alice:<tok>,bob:<tok>") that gives them
// to an example server in HTTP mode. Tokens are 32 hex digits.
func Principals() (tokens map[string]string, env string) {
	tokens = map[string]string{}
	for _, who := range []string{"alice", "bob"} {
		b := make([]byte, 16)
		rand.Read(b)
		tokens[who] = hex.EncodeToString(b)
	}
	return tokens, "MCP_EXAMPLE_PRINCIPALS=alice:" + tokens["alice"] + ",bob:" + tokens["bob"]
}

// bearer adds "Authorization: Bearer <token>" to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// Client is one MCP client of one replica, calling the notebook tools
// (mcphost.Notebooks: CallJSON, NotebookCreate, NotebookAdd, NotebookRead,
// NotebookDelete) as one principal. Its methods are safe for concurrent use.
type Client struct {
	mcphost.Notebooks
}

// Connect completes the MCP handshake with the Streamable HTTP server at
// url (http://host:port/mcp) with "Authorization: Bearer <token>" on every
// request, within 15 s. The client opens no standalone SSE stream (the
// servers are stateless) and never retries a request on its own.
func Connect(ctx context.Context, url, token string) (*Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "mcp-resume-replicas", Version: "0.1.0"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           &http.Client{Transport: bearer{token, http.DefaultTransport}},
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}
	s, err := c.Connect(ctx, tr, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", url, err)
	}
	return &Client{mcphost.Notebooks{Session: s}}, nil
}

// Close ends the client's session.
func (c *Client) Close() { c.Session.Close() }

// Other is the call that shows a replica still serving while its store
// cannot: session_info, a tool that does not touch the handle store. Its
// text is returned; a tool error or a failed call is an error.
func (c *Client) Other(ctx context.Context) (string, error) {
	return mcphost.CallText(ctx, c.Session, "session_info", map[string]any{})
}
