package brokerclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/broker/broker"
	"github.com/mcp-resume/mcp-resume/examples/broker/brokerclient"
)

const ttl = time.Hour

// fakeClock is a settable clock for broker.Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newBroker starts a real broker on a loopback test server and returns a
// client for it and the broker's clock.
func newBroker(t *testing.T) (*brokerclient.Client, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	srv := httptest.NewServer(broker.New(&broker.Options{TokenTTL: ttl, Now: clock.Now}))
	t.Cleanup(srv.Close)
	return brokerclient.New(srv.URL+"/", srv.Client()), clock
}

// wantAPIError checks that err is an *brokerclient.Error with the given
// status and code, and that it wraps ErrRejected exactly when rejected.
func wantAPIError(t *testing.T, err error, status int, code string, rejected bool) {
	t.Helper()
	var apiErr *brokerclient.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v (%T) is not a *brokerclient.Error", err, err)
	}
	if apiErr.StatusCode != status || apiErr.Code != code {
		t.Errorf("error %v: got %d %q, want %d %q", err, apiErr.StatusCode, apiErr.Code, status, code)
	}
	if got := errors.Is(err, brokerclient.ErrRejected); got != rejected {
		t.Errorf("errors.Is(%v, ErrRejected) = %v, want %v", err, got, rejected)
	}
}

func TestClient_Start(t *testing.T) {
	c, _ := newBroker(t)
	s1, err := c.Start(t.Context())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	s2, err := c.Start(t.Context())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if s1.ID == "" || s1.Token == "" || s1.Resumed {
		t.Errorf("Start = %+v, want an ID, a token, and Resumed false", s1)
	}
	if s1.ID == s2.ID || s1.Token == s2.Token {
		t.Errorf("two Starts gave the same session or token: %+v, %+v", s1, s2)
	}
}

func TestClient_Resume(t *testing.T) {
	c, clock := newBroker(t)
	ctx := t.Context()
	start, err := c.Start(ctx)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	resumed, err := c.Resume(ctx, start.Token)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	want := brokerclient.Session{ID: start.ID, Token: resumed.Token, Resumed: true}
	if resumed != want || resumed.Token == start.Token {
		t.Fatalf("Resume mismatch (-want +got):\n- %+v with a new token\n+ %+v", want, resumed)
	}

	expiring, err := c.Start(ctx)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	clock.Advance(ttl / 2)
	// Keep resumed alive while expiring runs out. The broker remembers a
	// rotated token for one TTL, so use the one rotated now.
	rotated := resumed.Token
	if resumed, err = c.Resume(ctx, rotated); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	clock.Advance(ttl / 2)

	tests := []struct {
		name       string
		token      string
		wantStatus int
		wantCode   string
	}{
		{"rotated", rotated, http.StatusConflict, broker.CodeTokenRotated},
		{"unknown", "no-such-token", http.StatusUnauthorized, broker.CodeUnknownToken},
		{"rotated and forgotten", start.Token, http.StatusUnauthorized, broker.CodeUnknownToken},
		{"expired", expiring.Token, http.StatusGone, broker.CodeTokenExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := c.Resume(ctx, tt.token)
			if s != (brokerclient.Session{}) {
				t.Errorf("Resume returned session %+v with an error", s)
			}
			wantAPIError(t, err, tt.wantStatus, tt.wantCode, true)
		})
	}

	if _, err := c.Resume(ctx, resumed.Token); err != nil {
		t.Errorf("Resume(current token): %v", err)
	}
}

func TestClient_InvalidToken(t *testing.T) {
	c := brokerclient.New("http://127.0.0.1:1", &http.Client{
		Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("no request expected")
		}),
	})
	ctx := t.Context()
	for _, token := range []string{"", "with space", "new\nline", "tab\t", "ünïcode", strings.Repeat("a", 4097)} {
		if _, err := c.Resume(ctx, token); !errors.Is(err, brokerclient.ErrInvalidToken) {
			t.Errorf("Resume(%.20q): %v, want ErrInvalidToken", token, err)
		}
		if err := c.AddNote(ctx, token, "n"); !errors.Is(err, brokerclient.ErrInvalidToken) {
			t.Errorf("AddNote(%.20q): %v, want ErrInvalidToken", token, err)
		}
		if _, err := c.Notes(ctx, token); !errors.Is(err, brokerclient.ErrInvalidToken) {
			t.Errorf("Notes(%.20q): %v, want ErrInvalidToken", token, err)
		}
	}
}

func TestClient_Notes(t *testing.T) {
	c, _ := newBroker(t)
	ctx := t.Context()
	s, err := c.Start(ctx)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	notes, err := c.Notes(ctx, s.Token)
	if err != nil || notes == nil || len(notes) != 0 {
		t.Fatalf("Notes of a new session = %#v, %v; want an empty non-nil slice", notes, err)
	}
	if err := c.AddNote(ctx, s.Token, "before restart"); err != nil {
		t.Fatalf("AddNote: %v", err)
	}

	r, err := c.Resume(ctx, s.Token)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := c.AddNote(ctx, r.Token, "after restart"); err != nil {
		t.Fatalf("AddNote: %v", err)
	}
	notes, err = c.Notes(ctx, r.Token)
	if err != nil {
		t.Fatalf("Notes: %v", err)
	}
	if want := []string{"before restart", "after restart"}; !reflect.DeepEqual(want, notes) {
		t.Errorf("Notes mismatch (-want +got):\n- %q\n+ %q", want, notes)
	}

	// The rotated token is refused on both calls.
	_, err = c.Notes(ctx, s.Token)
	wantAPIError(t, err, http.StatusUnauthorized, broker.CodeTokenRotated, true)
	err = c.AddNote(ctx, s.Token, "stale writer")
	wantAPIError(t, err, http.StatusUnauthorized, broker.CodeTokenRotated, true)

	// A refused note is not a refused token.
	err = c.AddNote(ctx, r.Token, strings.Repeat("x", broker.MaxNoteBytes+1))
	wantAPIError(t, err, http.StatusRequestEntityTooLarge, broker.CodeNoteTooLarge, false)
	err = c.AddNote(ctx, r.Token, "")
	wantAPIError(t, err, http.StatusBadRequest, broker.CodeInvalidRequest, false)
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestClient_BadAnswers(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		call    func(*brokerclient.Client) error
		wantErr error // nil: an *Error that does not wrap ErrRejected
	}{
		{"start: server error as text", http.StatusInternalServerError, "boom", start, nil},
		{"start: 401 as text", http.StatusUnauthorized, "go away", start, brokerclient.ErrRejected},
		{"start: body not JSON", http.StatusCreated, "<html>", start, brokerclient.ErrProtocol},
		{"start: no session ID", http.StatusCreated, `{"token":"abc"}`, start, brokerclient.ErrProtocol},
		{"start: token with space", http.StatusCreated, `{"session_id":"s_1","token":"a b"}`, start, brokerclient.ErrProtocol},
		{"start: empty token", http.StatusCreated, `{"session_id":"s_1","token":""}`, start, brokerclient.ErrProtocol},
		{"start: long token", http.StatusCreated, `{"session_id":"s_1","token":"` + strings.Repeat("a", 4097) + `"}`, start, brokerclient.ErrProtocol},
		{"start: wrong success status", http.StatusOK, `{"session_id":"s_1","token":"abc"}`, start, nil},
		{"notes: no notes array", http.StatusOK, `{"session_id":"s_1"}`, notes, brokerclient.ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			err := tt.call(brokerclient.New(srv.URL, srv.Client()))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("got %v, want an error wrapping %v", err, tt.wantErr)
				}
				return
			}
			wantAPIError(t, err, tt.status, "", false)
		})
	}
}

func start(c *brokerclient.Client) error {
	_, err := c.Start(context.Background())
	return err
}

func notes(c *brokerclient.Client) error {
	_, err := c.Notes(context.Background(), "token")
	return err
}

func TestClient_SendsProtocol(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s %s auth=%q type=%q", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type")))
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	c := brokerclient.New(srv.URL+"/", srv.Client())
	ctx := t.Context()
	_, _ = c.Start(ctx)
	_, _ = c.Resume(ctx, "tok")
	_ = c.AddNote(ctx, "tok", "n")
	_, _ = c.Notes(ctx, "tok")
	want := []string{
		`POST /v1/sessions auth="" type="application/json"`,
		`POST /v1/sessions/resume auth="" type="application/json"`,
		`POST /v1/notes auth="Bearer tok" type="application/json"`,
		`GET /v1/notes auth="Bearer tok" type=""`,
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(want, got) {
		t.Errorf("requests mismatch (-want +got):\n- %q\n+ %q", want, got)
	}
}

func TestClient_ContextCanceled(t *testing.T) {
	c, _ := newBroker(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a canceled context: %v, want context.Canceled", err)
	}
}

func TestError_Error(t *testing.T) {
	tests := []struct {
		err  brokerclient.Error
		want string
	}{
		{brokerclient.Error{StatusCode: 409, Code: "token_rotated", Message: "replaced"}, "broker answered 409 Conflict: token_rotated: replaced"},
		{brokerclient.Error{StatusCode: 502, Message: "bad gateway"}, "broker answered 502 Bad Gateway: bad gateway"},
		{brokerclient.Error{StatusCode: 500}, "broker answered 500 Internal Server Error"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() mismatch (-want +got):\n- %s\n+ %s", tt.want, got)
		}
	}
}
