package mcpadapter_test

import (
	"context"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/host/mcpadapter"
)

// A complete stdio MCP server with a notebook kept under a state handle:
// Attach is the one line the adapter needs; the tools return the store's
// errors as they come, which AddTool turns into tool errors
// ({"error": "handle_not_found", ...} with isError). (Compiled, not run: it
// serves on the process's stdio until the client leaves.)
func Example() {
	type notebook struct {
		Notes []string `json:"notes"`
	}
	type addIn struct {
		Handle string `json:"handle" jsonschema:"the notebook's handle, from notebook_create"`
		Note   string `json:"note" jsonschema:"the note to append"`
	}

	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
	a := mcpadapter.Attach(server, "notes", nil) // both stores open once the client is initialized
	defer a.Close(context.Background())

	mcpadapter.AddTool(server, &mcp.Tool{Name: "notebook_create", Description: "Creates a notebook and returns its handle."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (any, error) {
			c, err := a.CreateJSON(ctx, req, notebook{Notes: []string{}}) // bound to the caller (mcpadapter.Principal)
			if err != nil {
				return nil, err
			}
			return map[string]any{"handle": c.Handle}, nil
		})
	mcpadapter.AddTool(server, &mcp.Tool{Name: "notebook_add", Description: "Appends a note."},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (any, error) {
			nb, gen, err := mcpadapter.Update(ctx, a, req, in.Handle, func(nb *notebook) error {
				nb.Notes = append(nb.Notes, in.Note) // re-run on a conflict with the newer value
				return nil
			})
			if err != nil {
				return nil, err
			}
			return map[string]any{"notes": nb.Notes, "generation": gen}, nil
		})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}
