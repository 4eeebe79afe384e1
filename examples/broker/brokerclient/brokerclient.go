// Package brokerclient is a small client for the demo token broker of
// mcp-resume (examples/broker), used by the Go example MCP server.
//
// A server that finds a stored token calls [Client.Resume]; if that fails
// with [ErrRejected] it deletes the token file and calls [Client.Start]. In
// either case it stores the token of the returned [Session], because every
// successful resume rotates the token and the presented one stops working.
// The notes calls must always use the newest token.
//
// The wire protocol is specified in examples/broker/README.md.
package brokerclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxTokenBytes is the longest token the resume-token store accepts.
const maxTokenBytes = 4096

// maxResponseBytes bounds how much of a broker answer the client reads.
const maxResponseBytes = 1 << 20

// Sentinel errors. Compare with [errors.Is].
var (
	// ErrRejected is returned, wrapped in an [*Error] that carries the
	// broker's reason, when the broker refuses a token: status 401, 409 or
	// 410. A server that gets it on resume deletes its token file and starts
	// a new session; on a notes call it means another process resumed the
	// session (so this token was rotated) or the token expired.
	ErrRejected = errors.New("broker rejected the token")

	// ErrInvalidToken is returned, without contacting the broker, when a
	// token argument is not 1 to 4096 bytes of visible ASCII (0x21-0x7E).
	ErrInvalidToken = errors.New("invalid token: want 1 to 4096 bytes of visible ASCII")

	// ErrProtocol is returned when a successful broker answer is not what
	// the protocol specifies, for example a malformed body or a token that
	// the resume-token store could not hold.
	ErrProtocol = errors.New("broker answer violates the protocol")
)

// Session is a session as the broker issued or resumed it.
type Session struct {
	// ID identifies the session, e.g. "s_0123456789abcdef". It is stable
	// across resumes and is not a credential.
	ID string

	// Token is the session's current token: 1 to 4096 bytes of visible
	// ASCII. It is a credential; persist it, do not log it.
	Token string

	// Resumed is true if the session was resumed from an earlier token and
	// false if it is new.
	Resumed bool
}

// Error is an error answer from the broker. It wraps [ErrRejected] when
// StatusCode is 401, 409 or 410.
type Error struct {
	// StatusCode is the HTTP status of the answer, e.g. 409.
	StatusCode int

	// Code is the machine-readable reason from the JSON body's "error"
	// member, e.g. "token_rotated"; empty if the body was not a JSON error.
	// The values are the broker.Code* constants.
	Code string

	// Message is the human-readable explanation from the JSON body's
	// "message" member, or the start of a non-JSON body.
	Message string
}

// Error returns the status, code and message, e.g. `broker answered 409
// Conflict: token_rotated: this token was replaced ...`.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "broker answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Code != "" {
		b.WriteString(": " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Unwrap returns [ErrRejected] if the broker refused a token (status 401,
// 409 or 410), and nil otherwise.
func (e *Error) Unwrap() error {
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusConflict, http.StatusGone:
		return ErrRejected
	}
	return nil
}

// Client talks to one broker. It is safe for concurrent use by multiple
// goroutines. Bound each call's duration with its context.
type Client struct {
	baseURL string
	http    *http.Client
}

// New returns a Client for the broker at baseURL, e.g.
// "http://127.0.0.1:8080" (a trailing slash is ignored). httpClient sends
// the requests; nil means [http.DefaultClient].
func New(baseURL string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{baseURL: strings.TrimRight(baseURL, "/"), http: httpClient}
}

// sessionBody is the JSON answer to a start or resume.
type sessionBody struct {
	SessionID string `json:"session_id"`
	Token     string `json:"token"`
	Resumed   bool   `json:"resumed"`
}

// Start asks the broker for a new session (POST /v1/sessions) and returns it
// with Resumed false. Errors are an [*Error] for an error answer, wrapping
// [ErrProtocol] for a malformed answer, or a transport error.
func (c *Client) Start(ctx context.Context) (Session, error) {
	var body sessionBody
	if err := c.do(ctx, http.MethodPost, "/v1/sessions", "", struct{}{}, http.StatusCreated, &body); err != nil {
		return Session{}, fmt.Errorf("brokerclient: start session: %w", err)
	}
	s, err := body.session()
	if err != nil {
		return Session{}, fmt.Errorf("brokerclient: start session: %w", err)
	}
	return s, nil
}

// Resume offers token to the broker (POST /v1/sessions/resume) and returns
// the resumed session with Resumed true and a new Token; token itself stops
// working. If the broker refuses the token (unknown, rotated, or expired)
// the error wraps [ErrRejected] and an [*Error] whose Code says which. A
// malformed token gives [ErrInvalidToken] without a request.
func (c *Client) Resume(ctx context.Context, token string) (Session, error) {
	if err := checkToken(token); err != nil {
		return Session{}, fmt.Errorf("brokerclient: resume session: %w", err)
	}
	var body sessionBody
	req := struct {
		Token string `json:"token"`
	}{token}
	if err := c.do(ctx, http.MethodPost, "/v1/sessions/resume", "", req, http.StatusOK, &body); err != nil {
		return Session{}, fmt.Errorf("brokerclient: resume session: %w", err)
	}
	s, err := body.session()
	if err != nil {
		return Session{}, fmt.Errorf("brokerclient: resume session: %w", err)
	}
	return s, nil
}

// AddNote appends note (1 to 4096 bytes of UTF-8) to the notes of the
// session whose current token is token (POST /v1/notes). If the broker
// refuses the token the error wraps [ErrRejected]; a note it refuses gives
// an [*Error] with status 400 or 413.
func (c *Client) AddNote(ctx context.Context, token, note string) error {
	if err := checkToken(token); err != nil {
		return fmt.Errorf("brokerclient: add note: %w", err)
	}
	req := struct {
		Note string `json:"note"`
	}{note}
	if err := c.do(ctx, http.MethodPost, "/v1/notes", token, req, http.StatusNoContent, nil); err != nil {
		return fmt.Errorf("brokerclient: add note: %w", err)
	}
	return nil
}

// Notes returns the notes of the session whose current token is token (GET
// /v1/notes), oldest first; a session without notes gives an empty, non-nil
// slice. If the broker refuses the token the error wraps [ErrRejected].
func (c *Client) Notes(ctx context.Context, token string) ([]string, error) {
	if err := checkToken(token); err != nil {
		return nil, fmt.Errorf("brokerclient: list notes: %w", err)
	}
	var body struct {
		SessionID string   `json:"session_id"`
		Notes     []string `json:"notes"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/notes", token, nil, http.StatusOK, &body); err != nil {
		return nil, fmt.Errorf("brokerclient: list notes: %w", err)
	}
	if body.Notes == nil {
		return nil, fmt.Errorf("brokerclient: list notes: %w: no \"notes\" array", ErrProtocol)
	}
	return body.Notes, nil
}

// session checks b and converts it to a Session.
func (b sessionBody) session() (Session, error) {
	if b.SessionID == "" {
		return Session{}, fmt.Errorf("%w: no \"session_id\"", ErrProtocol)
	}
	if checkToken(b.Token) != nil {
		return Session{}, fmt.Errorf("%w: the issued token is not 1 to %d bytes of visible ASCII", ErrProtocol, maxTokenBytes)
	}
	return Session{ID: b.SessionID, Token: b.Token, Resumed: b.Resumed}, nil
}

// do sends a request with reqBody (nil for none) as JSON and, if token is not
// empty, token as bearer credential. It expects wantStatus and decodes the
// answer into respBody unless respBody is nil. Any other status gives an
// *Error.
func (c *Client) do(ctx context.Context, method, path, token string, reqBody any, wantStatus int, respBody any) error {
	var body io.Reader
	if reqBody != nil {
		b, err := json.Marshal(reqBody)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if reqBody != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("read broker answer: %w", err)
	}

	if resp.StatusCode != wantStatus {
		apiErr := &Error{StatusCode: resp.StatusCode}
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			apiErr.Code, apiErr.Message = e.Error, e.Message
		} else {
			apiErr.Message = snippet(data)
		}
		return apiErr
	}
	if respBody == nil {
		return nil
	}
	if err := json.Unmarshal(data, respBody); err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	return nil
}

// checkToken returns ErrInvalidToken unless token is 1 to maxTokenBytes
// bytes of visible ASCII.
func checkToken(token string) error {
	if len(token) == 0 || len(token) > maxTokenBytes {
		return ErrInvalidToken
	}
	for i := range len(token) {
		if token[i] < 0x21 || token[i] > 0x7e {
			return ErrInvalidToken
		}
	}
	return nil
}

// snippet returns the start of a non-JSON body, trimmed, for an error
// message.
func snippet(data []byte) string {
	const maxSnippet = 200
	s := strings.TrimSpace(string(data))
	if len(s) > maxSnippet {
		s = s[:maxSnippet] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
