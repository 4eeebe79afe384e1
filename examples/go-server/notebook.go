package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/host/mcpadapter"
)

// The notebook tools: state for a sessionless client, kept in the handle
// store under a handle the client passes back, through the SDK adapter
// (package host/mcpadapter: the store opens in the background, the
// principal comes from the bearer token, a store error is a tool error).
// The same four tools, names and JSON as the Python and TypeScript example
// servers, so that a notebook made through one is read through another.
// The store is independent of resume and of the broker: they work with
// MCP_RESUME=off and without a broker session.

// notebook is a handle's value: the JSON {"notes": [...]} in UTF-8.
type notebook struct {
	Notes []string `json:"notes"`
}

// notebooks serves the notebook tools of one server through its adapter.
type notebooks struct {
	server *mcp.Server
	a      *mcpadapter.Adapter
}

// opened is the adapter's OnHandlesOpen: notebook_create's description now
// states the store's real policy; the SDK tells connected clients that the
// tool list changed.
func (n *notebooks) opened(hs *host.Handles) {
	p := hs.Policy()
	n.addCreate(&p)
}

// listWaitsForStore holds a tools/list until the handle store has opened
// (or failed to), so that the first list a host takes already states the
// store's real policy in notebook_create's description. The handshake
// itself never waits: the open starts once the client is initialized.
func (n *notebooks) listWaitsForStore(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/list" {
			_, _ = n.a.Handles(ctx) // a failure is answered by the tools themselves
		}
		return next(ctx, method, req)
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

// register adds the four tools to n.server.
func (n *notebooks) register() {
	n.addCreate(nil)
	n.server.AddReceivingMiddleware(n.listWaitsForStore)
	mcpadapter.AddTool(n.server, &mcp.Tool{Name: "notebook_add", Description: "Appends a note to a notebook and returns its new generation. With generation, only if the notebook is still at that generation."},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (any, error) {
			gen, err := n.add(ctx, req, in)
			if err != nil {
				return nil, err
			}
			return map[string]any{"generation": gen}, nil
		})
	mcpadapter.AddTool(n.server, &mcp.Tool{Name: "notebook_read", Description: "Returns a notebook's notes and generation."},
		func(ctx context.Context, req *mcp.CallToolRequest, in handleIn) (any, error) {
			var nb notebook
			gen, err := n.a.GetJSON(ctx, req, in.Handle, &nb)
			if err = checked(nb, err); err != nil {
				return nil, err
			}
			return map[string]any{"notes": nb.Notes, "generation": gen}, nil
		})
	mcpadapter.AddTool(n.server, &mcp.Tool{Name: "notebook_delete", Description: "Deletes a notebook; its handle then answers handle_not_found. With generation, only if the notebook is still at that generation."},
		func(ctx context.Context, req *mcp.CallToolRequest, in deleteIn) (any, error) {
			principal, err := mcpadapter.Principal(req)
			if err != nil {
				return nil, err
			}
			hs, err := n.a.Handles(ctx)
			if err != nil {
				return nil, err
			}
			opts, err := expected(in.Generation)
			if err != nil {
				return nil, err
			}
			if err := hs.Delete(ctx, in.Handle, principal, opts...); err != nil {
				return nil, err
			}
			return map[string]any{}, nil
		})
}

// addCreate adds notebook_create, described from policy p (nil: not open yet).
func (n *notebooks) addCreate(p *host.HandlePolicy) {
	mcpadapter.AddTool(n.server, &mcp.Tool{Name: "notebook_create", Description: createDescription(p)},
		func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (any, error) {
			c, err := n.a.CreateJSON(ctx, req, notebook{Notes: []string{}})
			if err != nil {
				return nil, err
			}
			return createOut{Handle: c.Handle, Generation: c.Generation,
				IdleTTLSeconds: int64(c.IdleTTL.Seconds()), MaxAgeSeconds: int64(c.MaxAge.Seconds())}, nil
		})
}

// add appends the note: with a given generation, read and write back
// expecting it (a conflict is the answer); without, mcpadapter.Update,
// which reads again and retries after a conflict.
func (n *notebooks) add(ctx context.Context, req *mcp.CallToolRequest, in addIn) (int64, error) {
	if _, err := n.a.Handles(ctx); err != nil {
		return 0, err
	}
	opts, err := expected(in.Generation)
	if err != nil {
		return 0, err
	}
	if opts == nil {
		_, gen, err := mcpadapter.Update(ctx, n.a, req, in.Handle, func(nb *notebook) error {
			if err := checked(*nb, nil); err != nil {
				return err
			}
			nb.Notes = append(nb.Notes, in.Note)
			return nil
		})
		return gen, err
	}
	var nb notebook
	_, err = n.a.GetJSON(ctx, req, in.Handle, &nb)
	if err = checked(nb, err); err != nil {
		return 0, err
	}
	nb.Notes = append(nb.Notes, in.Note)
	return n.a.PutJSON(ctx, req, in.Handle, nb, opts...)
}

// checked is err, or for a value that is not a notebook (not JSON, or no
// "notes" list) an invalid_value error saying so.
func checked(nb notebook, err error) error {
	if err == nil && nb.Notes != nil || err != nil && !errors.Is(err, host.ErrInvalidValue) {
		return err
	}
	return &host.Error{Code: "invalid_value", Message: `the handle's value is not a notebook ({"notes": [...]})`}
}

// expected is the write option of a given generation for Put and Delete,
// none when none was given. A given 0 (or less) is refused here with the
// message the plugin gives the Python and TypeScript servers, which pass
// it through.
func expected(p *int64) ([]host.WriteOption, error) {
	switch {
	case p == nil:
		return nil, nil
	case *p < 1:
		return nil, &host.Error{Code: "invalid_option", Message: fmt.Sprintf("generation must be a whole number of at least 1 (generations start at 1), not %d", *p)}
	}
	return []host.WriteOption{host.IfGeneration(*p)}, nil
}
