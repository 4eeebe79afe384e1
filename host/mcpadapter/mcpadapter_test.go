package mcpadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/host/mcpadapter"
)

// Real parts: a real MCP server built with the adapter (this test binary
// run again as a stdio server, or served over HTTP with the SDK's bearer
// middleware), the real plugin in the Go host, and the official SDK's
// client. Resume needs the test to run under a terminal (bin/withtty), as
// the host package's tests do: the MCP host of the stdio server is this
// test process.

// envChild makes this test binary a stdio MCP server (serveChild).
const envChild = "MCPADAPTER_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		os.Exit(serveChild())
	}
	os.Exit(m.Run())
}

// serveChild serves newServer on stdio until the client leaves; the
// retries of Update are $MCPADAPTER_TEST_RETRIES when set.
func serveChild() int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts := &mcpadapter.Options{Logger: logger}
	if r := os.Getenv("MCPADAPTER_TEST_RETRIES"); r != "" {
		opts.UpdateRetries, _ = strconv.Atoi(r)
	}
	server, a := newServer(opts)
	defer a.Close(context.Background())
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		logger.Error("test server", "error", err)
		return 1
	}
	return 0
}

type notebook struct {
	Notes []string `json:"notes"`
}

type handleIn struct {
	Handle string `json:"handle"`
}

type addIn struct {
	Handle string `json:"handle"`
	Note   string `json:"note"`
	// Interlope: on the first try, another writer puts the notebook
	// between Update's read and its write (a real conflict in the store).
	Interlope bool `json:"interlope,omitempty"`
}

type resumeIn struct {
	Store string `json:"store"`
}

// newServer is the test's MCP server: the adapter and a notebook's tools,
// written as a user of the package writes them.
func newServer(opts *mcpadapter.Options) (*mcp.Server, *mcpadapter.Adapter) {
	server := mcp.NewServer(&mcp.Implementation{Name: "mcpadapter-test", Version: "1"}, nil)
	a := mcpadapter.Attach(server, "mcpadapter-test", opts)
	mcpadapter.AddTool(server, &mcp.Tool{Name: "resume", Description: "Loads the previous instance's token, stores the given one."},
		func(ctx context.Context, req *mcp.CallToolRequest, in resumeIn) (any, error) {
			store, err := a.Resume(ctx)
			if err != nil {
				return nil, err
			}
			loaded, found := store.Load(ctx)
			if err := store.Store(ctx, in.Store); err != nil {
				return nil, err
			}
			return map[string]any{"loaded": loaded, "found": found}, nil
		})
	mcpadapter.AddTool(server, &mcp.Tool{Name: "note_create", Description: "Creates a notebook."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (any, error) {
			c, err := a.CreateJSON(ctx, req, notebook{Notes: []string{}})
			if err != nil {
				return nil, err
			}
			return map[string]any{"handle": c.Handle, "generation": c.Generation}, nil
		})
	mcpadapter.AddTool(server, &mcp.Tool{Name: "note_read", Description: "Reads a notebook."},
		func(ctx context.Context, req *mcp.CallToolRequest, in handleIn) (any, error) {
			var nb notebook
			gen, err := a.GetJSON(ctx, req, in.Handle, &nb)
			if err != nil {
				return nil, err
			}
			return map[string]any{"notes": nb.Notes, "generation": gen}, nil
		})
	mcpadapter.AddTool(server, &mcp.Tool{Name: "note_add", Description: "Appends a note."},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (any, error) {
			tries := 0
			nb, gen, err := mcpadapter.Update(ctx, a, req, in.Handle, func(nb *notebook) error {
				tries++
				if in.Interlope && tries == 1 {
					other := notebook{Notes: append(append([]string{}, nb.Notes...), "interloper")}
					if _, err := a.PutJSON(ctx, req, in.Handle, other); err != nil {
						return err
					}
				}
				nb.Notes = append(nb.Notes, in.Note)
				return nil
			})
			if err != nil {
				return nil, err
			}
			return map[string]any{"notes": nb.Notes, "generation": gen, "tries": tries}, nil
		})
	return server, a
}

// launch starts this test binary as a stdio server under this process
// and connects the SDK's client to it.
func launch(t *testing.T, stateDir string, env ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"=1", host.EnvStateDir+"="+stateDir)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpadapter-test-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to the stdio server: %v", err)
	}
	return sess
}

// call runs tool with args and returns its structured content and isError.
func call(t *testing.T, sess *mcp.ClientSession, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", tool, b, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items, want 1", tool, len(res.Content))
	}
	if txt, ok := res.Content[0].(*mcp.TextContent); !ok || txt.Text != string(b) && !jsonEqual(txt.Text, b) {
		t.Errorf("%s: text content %v is not the structured content %s", tool, res.Content[0], b)
	}
	return out, res.IsError
}

func jsonEqual(a string, b []byte) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// A notebook and the resume token survive a relaunch of the server under
// the same MCP host (this process): the second instance loads the token
// the first stored, and reads the notebook the first wrote.
func TestStdio_ResumesAcrossRelaunch(t *testing.T) {
	state := t.TempDir()
	first := launch(t, state)
	out, isErr := call(t, first, "resume", map[string]any{"store": "token-one"})
	if isErr || out["found"] != false {
		t.Fatalf("first instance's resume: %v (isError %v), want nothing found", out, isErr)
	}
	created, isErr := call(t, first, "note_create", map[string]any{})
	handle, _ := created["handle"].(string)
	if isErr || !strings.HasPrefix(handle, "mrh1_") {
		t.Fatalf("note_create: %v", created)
	}
	if out, isErr := call(t, first, "note_add", map[string]any{"handle": handle, "note": "before the relaunch"}); isErr || out["generation"] != 2.0 {
		t.Fatalf("note_add: %v", out)
	}
	first.Close()

	second := launch(t, state)
	defer second.Close()
	out, isErr = call(t, second, "resume", map[string]any{"store": "token-two"})
	if isErr || out["found"] != true || out["loaded"] != "token-one" {
		t.Fatalf("relaunched instance's resume: %v (isError %v), want token-one found (run under bin/withtty)", out, isErr)
	}
	out, isErr = call(t, second, "note_read", map[string]any{"handle": handle})
	if isErr || !reflect.DeepEqual(out["notes"], []any{"before the relaunch"}) || out["generation"] != 2.0 {
		t.Fatalf("note_read after the relaunch: %v (isError %v)", out, isErr)
	}
}

// A store error in a tool is an isError result carrying the structured
// error: a malformed handle, an unknown one.
func TestStdio_StoreErrorIsToolError(t *testing.T) {
	sess := launch(t, t.TempDir())
	defer sess.Close()
	out, isErr := call(t, sess, "note_read", map[string]any{"handle": "not-a-handle"})
	if !isErr || out["error"] != "invalid_handle" || out["message"] == "" {
		t.Errorf("a malformed handle: %v (isError %v), want invalid_handle", out, isErr)
	}
	out, isErr = call(t, sess, "note_add", map[string]any{"handle": "mrh1_" + strings.Repeat("A", 32), "note": "x"})
	if !isErr || out["error"] != "handle_not_found" {
		t.Errorf("an unknown handle: %v (isError %v), want handle_not_found", out, isErr)
	}
}

// Update retries on a real conflict: another writer puts the notebook
// between its read and its write; the retry reads that write and keeps
// it. With retries off the conflict is the tool's error, with the
// current generation.
func TestStdio_UpdateRetriesOnConflict(t *testing.T) {
	state := t.TempDir()
	sess := launch(t, state)
	created, _ := call(t, sess, "note_create", map[string]any{})
	handle := created["handle"].(string)
	out, isErr := call(t, sess, "note_add", map[string]any{"handle": handle, "note": "mine", "interlope": true})
	if isErr || out["tries"] != 2.0 || !reflect.DeepEqual(out["notes"], []any{"interloper", "mine"}) || out["generation"] != 3.0 {
		t.Fatalf("note_add with a conflict: %v (isError %v), want 2 tries, [interloper mine] at generation 3", out, isErr)
	}
	sess.Close()

	sess = launch(t, state, "MCPADAPTER_TEST_RETRIES=-1")
	defer sess.Close()
	out, isErr = call(t, sess, "note_add", map[string]any{"handle": handle, "note": "again", "interlope": true})
	if !isErr || out["error"] != "conflict" || out["generation"] != 4.0 {
		t.Fatalf("note_add with a conflict and no retries: %v (isError %v), want conflict at generation 4", out, isErr)
	}
}

// bearer adds a bearer token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// Over Streamable HTTP with the SDK's bearer middleware, the principal is
// the token's user: alice's notebook is handle_not_found for bob.
func TestHTTP_PrincipalFromAuth(t *testing.T) {
	server, a := newServer(&mcpadapter.Options{NoResume: true, Handles: &host.HandleOptions{StateRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler)}})
	defer a.Close(context.Background())
	a.Start()
	users := map[string]string{"alice-token": "alice", "bob-token": "bob"}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if u, ok := users[token]; ok {
			return &auth.TokenInfo{UserID: u, Expiration: time.Now().Add(time.Hour)}, nil
		}
		return nil, auth.ErrInvalidToken
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(auth.RequireBearerToken(verify, nil)(h))
	defer ts.Close()
	connect := func(token string) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "1"}, nil)
		sess, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearer(token)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sess.Close() })
		return sess
	}
	alice, bob := connect("alice-token"), connect("bob-token")
	created, isErr := call(t, alice, "note_create", map[string]any{})
	handle, _ := created["handle"].(string)
	if isErr || handle == "" {
		t.Fatalf("alice's note_create: %v", created)
	}
	if out, isErr := call(t, alice, "note_add", map[string]any{"handle": handle, "note": "alice's"}); isErr {
		t.Fatalf("alice's note_add: %v", out)
	}
	out, isErr := call(t, bob, "note_read", map[string]any{"handle": handle})
	if !isErr || out["error"] != "handle_not_found" {
		t.Errorf("bob reading alice's notebook: %v (isError %v), want handle_not_found", out, isErr)
	}
	out, isErr = call(t, alice, "note_read", map[string]any{"handle": handle})
	if isErr || !reflect.DeepEqual(out["notes"], []any{"alice's"}) {
		t.Errorf("alice reading her notebook: %v (isError %v)", out, isErr)
	}
}

// A handle store that cannot open (here a bad option in the environment)
// leaves the server serving: its tools answer store_unavailable saying
// why, and Handles gives the same error.
func TestStoreCannotOpen_ToolsAnswerStoreUnavailable(t *testing.T) {
	t.Setenv("MCP_RESUME_STATE_IDLE_TTL", "soon")
	server, a := newServer(&mcpadapter.Options{NoResume: true, Handles: &host.HandleOptions{StateRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler)}, Logger: slog.New(slog.DiscardHandler)})
	defer a.Close(context.Background())
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out, isErr := call(t, sess, "note_create", map[string]any{})
	if msg, _ := out["message"].(string); !isErr || out["error"] != "store_unavailable" || !strings.Contains(msg, "MCP_RESUME_STATE_IDLE_TTL") {
		t.Errorf("note_create without a store: %v (isError %v), want store_unavailable naming the variable", out, isErr)
	}
	if _, err := a.Handles(ctx); !errors.Is(err, host.ErrStoreUnavailable) {
		t.Errorf("Handles: %v, want ErrStoreUnavailable", err)
	}
	// Resume with NoResume: a nil store (resume off), no error.
	if s, err := a.Resume(ctx); s != nil || err != nil {
		t.Errorf("Resume with NoResume: %v, %v", s, err)
	}
}

// ToolError: a store's *host.Error keeps its code and fields; a failure
// of the store that has no code is store_unavailable; any other error is
// the SDK's plain tool error.
func TestToolError(t *testing.T) {
	res := mcpadapter.ToolError(&host.Error{Code: "conflict", Message: "m", Generation: 7})
	b, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || string(b) != `{"error":"conflict","generation":7,"message":"m"}` || res.Content[0].(*mcp.TextContent).Text != string(b) {
		t.Errorf("conflict: %s, %+v", b, res)
	}
	res = mcpadapter.ToolError(fmt.Errorf("wrapped: %w", &host.Error{Code: "handle_expired", Message: "gone", Reason: "idle"}))
	b, _ = json.Marshal(res.StructuredContent)
	if string(b) != `{"error":"handle_expired","message":"gone","reason":"idle"}` {
		t.Errorf("wrapped handle_expired: %s", b)
	}
	res = mcpadapter.ToolError(fmt.Errorf("%w: trap", host.ErrPlugin))
	b, _ = json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"error":"store_unavailable"`) {
		t.Errorf("ErrPlugin: %s", b)
	}
	res = mcpadapter.ToolError(errors.New("the tool's own failure"))
	if !res.IsError || res.StructuredContent != nil || res.Content[0].(*mcp.TextContent).Text != "the tool's own failure" {
		t.Errorf("another error: %+v", res)
	}
	if mcpadapter.ToolError(nil) != nil {
		t.Error("ToolError(nil) is not nil")
	}
	if p, err := mcpadapter.Principal(&mcp.CallToolRequest{}); p != "" || err != nil {
		t.Errorf("Principal without auth = %q, %v", p, err)
	}
}

// TestPrincipal_AuthenticatedWithoutUser: a verified token that names no
// user is refused rather than run as the anonymous principal "", which
// every such caller would share.
func TestPrincipal_AuthenticatedWithoutUser(t *testing.T) {
	req := func(info *auth.TokenInfo) *mcp.CallToolRequest {
		return &mcp.CallToolRequest{Extra: &mcp.RequestExtra{TokenInfo: info}}
	}
	if p, err := mcpadapter.Principal(req(&auth.TokenInfo{UserID: "alice"})); p != "alice" || err != nil {
		t.Errorf("Principal(alice) = %q, %v", p, err)
	}
	_, err := mcpadapter.Principal(req(&auth.TokenInfo{}))
	if !errors.Is(err, host.ErrInvalidPrincipal) {
		t.Fatalf("Principal(no UserID) error = %v, want ErrInvalidPrincipal", err)
	}
	a := mcpadapter.Attach(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), "principal-test", &mcpadapter.Options{NoResume: true, Handles: &host.HandleOptions{StateRoot: t.TempDir()}})
	defer a.Close(context.Background())
	if _, err := a.CreateJSON(context.Background(), req(&auth.TokenInfo{}), map[string]int{}); !errors.Is(err, host.ErrInvalidPrincipal) {
		t.Errorf("CreateJSON(no UserID) error = %v, want ErrInvalidPrincipal", err)
	}
}
