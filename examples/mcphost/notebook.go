package mcphost

// The example servers' notebook tools (the handle store's example:
// notebook_create, notebook_add, notebook_read, notebook_delete; the same
// names and JSON in the Go, Python and TypeScript servers), called the way a
// host calls them.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Notebook is notebook_create's result.
type Notebook struct {
	// Handle is the notebook's handle (mrh1_ + 32 base64url characters).
	Handle string `json:"handle"`
	// Generation is 1 for a new notebook.
	Generation int64 `json:"generation"`
	// IdleTTLSeconds and MaxAgeSeconds are the notebook's lifetime, in
	// seconds: idle time before it expires, and age at which it expires
	// whatever its use.
	IdleTTLSeconds float64 `json:"idle_ttl_seconds"`
	MaxAgeSeconds  float64 `json:"max_age_seconds"`
}

// ToolError is a notebook tool's error: the tool answered isError with the
// structured content {"error", "message", "reason"?, "generation"?}.
type ToolError struct {
	Tool string
	// Code is the handle store's error code (handle_expired, conflict, ...).
	Code    string `json:"error"`
	Message string `json:"message"`
	// Reason is "idle" or "max_age" for handle_expired, else "".
	Reason string `json:"reason,omitempty"`
	// Generation is the current generation for conflict, else 0.
	Generation int64 `json:"generation,omitempty"`
	// Text is the tool's text content as received.
	Text string `json:"-"`
}

func (e *ToolError) Error() string {
	s := fmt.Sprintf("tool %s: %s: %s", e.Tool, e.Code, e.Message)
	if e.Reason != "" {
		s += " (reason " + e.Reason + ")"
	}
	return s
}

// ErrorCode returns the code of err when it is a *ToolError (the handle
// store's error code), else "".
func ErrorCode(err error) string {
	if te, ok := err.(*ToolError); ok {
		return te.Code
	}
	return ""
}

// Notebooks calls tools, the notebook tools among them, over one MCP
// client session: a launched stdio Server's (which embeds it), or a
// Streamable HTTP replica's (examples/replicas). Safe for concurrent use.
type Notebooks struct {
	Session *mcp.ClientSession
}

// CallJSON calls tool with args (any JSON object, so callers can send wrong
// types too) and decodes its result into out (nil: ignore it). The result is
// the tool's text content (the notebook tools' JSON), or its structured
// content when it has no text. A tool error is a *ToolError; a failed call
// (transport, protocol, 15 s timeout) is another error.
func (s Notebooks) CallJSON(ctx context.Context, tool string, args map[string]any, out any) error {
	res, text, err := callTool(ctx, s.Session, tool, args)
	if err != nil {
		return err
	}
	raw := []byte(text)
	if len(raw) == 0 && res.StructuredContent != nil {
		raw, _ = json.Marshal(res.StructuredContent)
	}
	if res.IsError {
		te := &ToolError{Tool: tool, Text: text}
		if res.StructuredContent != nil {
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, te)
		}
		if te.Code == "" {
			_ = json.Unmarshal(raw, te)
		}
		if te.Code == "" {
			te.Code, te.Message = "(no code)", text
		}
		return te
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s answered %q: %w", tool, raw, err)
	}
	return nil
}

// NotebookCreate calls notebook_create.
func (s Notebooks) NotebookCreate(ctx context.Context) (Notebook, error) {
	var nb Notebook
	err := s.CallJSON(ctx, "notebook_create", map[string]any{}, &nb)
	return nb, err
}

// NotebookAdd calls notebook_add and returns the new generation. expect > 0
// is sent as "generation" (compare-and-set: conflict unless it is the
// current one); 0 leaves it out (the server retries on conflict).
func (s Notebooks) NotebookAdd(ctx context.Context, handle, note string, expect int64) (int64, error) {
	args := map[string]any{"handle": handle, "note": note}
	if expect > 0 {
		args["generation"] = expect
	}
	var out struct {
		Generation int64 `json:"generation"`
	}
	err := s.CallJSON(ctx, "notebook_add", args, &out)
	return out.Generation, err
}

// NotebookRead calls notebook_read and returns the notes and generation.
func (s Notebooks) NotebookRead(ctx context.Context, handle string) ([]string, int64, error) {
	var out struct {
		Notes      []string `json:"notes"`
		Generation int64    `json:"generation"`
	}
	err := s.CallJSON(ctx, "notebook_read", map[string]any{"handle": handle}, &out)
	return out.Notes, out.Generation, err
}

// NotebookDelete calls notebook_delete; expect > 0 is sent as "generation".
func (s Notebooks) NotebookDelete(ctx context.Context, handle string, expect int64) error {
	args := map[string]any{"handle": handle}
	if expect > 0 {
		args["generation"] = expect
	}
	return s.CallJSON(ctx, "notebook_delete", args, nil)
}

// ToolDescription returns the description of the server's tool name (from
// tools/list), or an error when the server has no such tool.
func (s *Server) ToolDescription(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for tool, err := range s.session.Tools(ctx, nil) {
		if err != nil {
			return "", err
		}
		if tool.Name == name {
			return tool.Description, nil
		}
	}
	return "", fmt.Errorf("the server has no tool %s", name)
}
