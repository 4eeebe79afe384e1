package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/host"
)

// The notebook tools: state for a sessionless client, kept in the handle
// store (package host, OpenHandles) under a handle the client passes back.
// The same four tools, names and JSON as the Python and TypeScript example
// servers, so that a notebook made through one is read through another.
// The store is independent of resume and of the broker: they work with
// MCP_RESUME=off and without a broker session.

// notebook is a handle's value: the JSON {"notes": [...]} in UTF-8.
type notebook struct {
	Notes []string `json:"notes"`
}

// The principal the handles are bound to is principalOf(request) (http.go):
// "" (anonymous) over stdio, where the process itself belongs to its one
// client; in HTTP mode the bearer token's principal, so that alice's
// notebook is handle_not_found for bob.

// addRetries is how many times notebook_add reads again and retries after
// a conflict when the caller gave no generation.
const addRetries = 5

// notebooks serves the notebook tools over a handle store opened once, in
// the background (opening loads a plugin instance, about 50 ms, which the
// MCP handshake does not wait for).
type notebooks struct {
	once    func() (*host.Handles, error) // opens once; later calls wait for it and share the answer
	started atomic.Bool
	server  *mcp.Server
}

// open returns the store, opening it on the first call.
func (n *notebooks) open() (*host.Handles, error) {
	n.started.Store(true)
	return n.once()
}

// listWaitsForStore holds a tools/list until the handle store has opened
// (or failed to), so that the first list a host takes already states the
// store's real policy in notebook_create's description. The handshake
// itself never waits: the open starts once the client is initialized.
func (n *notebooks) listWaitsForStore(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/list" {
			_, _ = n.open() // a failure is answered by the tools themselves
		}
		return next(ctx, method, req)
	}
}

// newNotebooks returns the notebook tools of app's handle store.
func newNotebooks(app string, logger *slog.Logger) *notebooks {
	n := &notebooks{}
	n.once = sync.OnceValues(func() (*host.Handles, error) {
		hs, err := host.OpenHandles(context.Background(), app, &host.HandleOptions{Logger: logger})
		if err != nil {
			logger.Warn("handle store unavailable; the notebook tools answer store_unavailable", "error", err)
			return nil, &host.Error{Code: "store_unavailable", Message: err.Error()}
		}
		if n.server != nil {
			// The description now states the store's real policy; the SDK
			// tells connected clients that the tool list changed.
			p := hs.Policy()
			n.addCreate(&p)
		}
		return hs, nil
	})
	return n
}

// close closes the store if it was opened (waiting for an open under way).
func (n *notebooks) close() {
	if !n.started.Load() {
		return
	}
	if hs, err := n.once(); err == nil {
		hs.Close(context.Background())
	}
}

// createDescription states the durability policy of a store that has
// policy p, as sessionless MCP asks of a create tool.
func createDescription(p *host.HandlePolicy) string {
	if p == nil {
		return "Creates a notebook and returns its handle. The notebook expires after a time idle and a time after creation at the latest (the handle store's policy, stated here once the store is open); an expired handle answers handle_expired."
	}
	return fmt.Sprintf("Creates a notebook and returns its handle. The notebook expires after %v idle and %v after creation at the latest; an expired handle answers handle_expired.", p.IdleTTL, p.MaxAge)
}

type createOut struct {
	Handle         string `json:"handle"`
	Generation     int64  `json:"generation"`
	IdleTTLSeconds int64  `json:"idle_ttl_seconds"`
	MaxAgeSeconds  int64  `json:"max_age_seconds"`
}

type addIn struct {
	Handle     string `json:"handle" jsonschema:"the notebook's handle, from notebook_create"`
	Note       string `json:"note" jsonschema:"the note to append"`
	Generation *int64 `json:"generation,omitempty" jsonschema:"write only if the notebook is still at this generation (else: conflict, with the current one)"`
}

type handleIn struct {
	Handle string `json:"handle" jsonschema:"the notebook's handle, from notebook_create"`
}

type deleteIn struct {
	Handle     string `json:"handle" jsonschema:"the notebook's handle, from notebook_create"`
	Generation *int64 `json:"generation,omitempty" jsonschema:"delete only if the notebook is still at this generation (else: conflict, with the current one)"`
}

// register adds the four tools to server.
func (n *notebooks) register(server *mcp.Server) {
	n.server = server
	n.addCreate(nil)
	server.AddReceivingMiddleware(n.listWaitsForStore)
	mcp.AddTool(server, &mcp.Tool{Name: "notebook_add", Description: "Appends a note to a notebook and returns its new generation. With generation, only if the notebook is still at that generation."},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			return n.result(n.add(ctx, principalOf(req), in))
		})
	mcp.AddTool(server, &mcp.Tool{Name: "notebook_read", Description: "Returns a notebook's notes and generation."},
		func(ctx context.Context, req *mcp.CallToolRequest, in handleIn) (*mcp.CallToolResult, any, error) {
			hs, err := n.open()
			if err != nil {
				return n.result(nil, err)
			}
			v, err := hs.Get(ctx, in.Handle, principalOf(req))
			if err != nil {
				return n.result(nil, err)
			}
			nb, err := decode(v.Data)
			if err != nil {
				return n.result(nil, err)
			}
			return n.result(map[string]any{"notes": nb.Notes, "generation": v.Generation}, nil)
		})
	mcp.AddTool(server, &mcp.Tool{Name: "notebook_delete", Description: "Deletes a notebook; its handle then answers handle_not_found. With generation, only if the notebook is still at that generation."},
		func(ctx context.Context, req *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, any, error) {
			hs, err := n.open()
			expect, gerr := expected(in.Generation)
			if err == nil && gerr != nil {
				err = gerr
			}
			if err == nil {
				err = hs.Delete(ctx, in.Handle, principalOf(req), expect...)
			}
			return n.result(map[string]any{}, err)
		})
}

// addCreate adds notebook_create, described from policy p (nil: not open yet).
func (n *notebooks) addCreate(p *host.HandlePolicy) {
	mcp.AddTool(n.server, &mcp.Tool{Name: "notebook_create", Description: createDescription(p)},
		func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			hs, err := n.open()
			if err != nil {
				return n.result(nil, err)
			}
			value, _ := json.Marshal(notebook{Notes: []string{}})
			c, err := hs.Create(ctx, principalOf(req), value)
			if err != nil {
				return n.result(nil, err)
			}
			return n.result(createOut{Handle: c.Handle, Generation: c.Generation,
				IdleTTLSeconds: int64(c.IdleTTL.Seconds()), MaxAgeSeconds: int64(c.MaxAge.Seconds())}, nil)
		})
}

// add reads principal's notebook, appends the note and writes it back, expecting
// the generation the caller gave, else the one it read; without a given
// generation a conflict (another writer in between) reads again, up to
// addRetries times.
func (n *notebooks) add(ctx context.Context, principal string, in addIn) (any, error) {
	hs, err := n.open()
	if err != nil {
		return nil, err
	}
	if _, err := expected(in.Generation); err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		v, err := hs.Get(ctx, in.Handle, principal)
		if err != nil {
			return nil, err
		}
		nb, err := decode(v.Data)
		if err != nil {
			return nil, err
		}
		value, _ := json.Marshal(notebook{Notes: append(nb.Notes, in.Note)})
		expect := v.Generation
		if in.Generation != nil {
			expect = *in.Generation
		}
		gen, err := hs.Put(ctx, in.Handle, principal, value, host.IfGeneration(expect))
		if errors.Is(err, host.ErrConflict) && in.Generation == nil && try < addRetries {
			continue
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{"generation": gen}, nil
	}
}

// decode reads a notebook value.
func decode(data []byte) (notebook, error) {
	var nb notebook
	if err := json.Unmarshal(data, &nb); err != nil || nb.Notes == nil {
		return nb, &host.Error{Code: "invalid_value", Message: `the handle's value is not a notebook ({"notes": [...]})`}
	}
	return nb, nil
}

// expected is the write option of a given generation for host.Handles.Put
// and Delete, none when none was given. A given 0 (or less) is refused
// here with the message the plugin gives the Python and TypeScript
// servers, which pass it through.
func expected(p *int64) ([]host.WriteOption, error) {
	switch {
	case p == nil:
		return nil, nil
	case *p < 1:
		return nil, &host.Error{Code: "invalid_option", Message: fmt.Sprintf("generation must be a whole number of at least 1 (generations start at 1), not %d", *p)}
	}
	return []host.WriteOption{host.IfGeneration(*p)}, nil
}

// result is a tool's answer: out as structured content and the same JSON
// as text, or, for err, an MCP tool error (isError) whose structured
// content is {"error": <code>, "message", "reason"?, "generation"?} with
// the same JSON as text. An error that is not the store's answer (the
// store could not open, the plugin failed) is store_unavailable.
func (n *notebooks) result(out any, err error) (*mcp.CallToolResult, any, error) {
	isError := err != nil
	if isError {
		var he *host.Error
		if !errors.As(err, &he) {
			he = &host.Error{Code: "store_unavailable", Message: err.Error()}
		}
		e := map[string]any{"error": he.Code, "message": he.Message}
		if he.Reason != "" {
			e["reason"] = he.Reason
		}
		if he.Generation != 0 {
			e["generation"] = he.Generation
		}
		out = e
	}
	b, jerr := json.Marshal(out)
	if jerr != nil {
		return nil, nil, jerr
	}
	return &mcp.CallToolResult{IsError: isError, StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
}
