package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
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

// response is a recorded answer with its JSON body decoded loosely.
type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// code returns the "error" member of an error body.
func (r response) code() string { s, _ := r.body["error"].(string); return s }

// str returns the string member name of the body.
func (r response) str(name string) string { s, _ := r.body[name].(string); return s }

// do sends one request to h. A non-empty token goes into the Authorization
// header as a bearer token.
func do(t *testing.T, h http.Handler, method, path, token, body string) response {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := response{status: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if rec.Body.Len() > 0 && method != http.MethodHead {
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: Content-Type = %q, want application/json", method, path, ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp.body); err != nil {
			t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, rec.Body.String(), err)
		}
	}
	return resp
}

// start starts a session and returns its ID and token.
func start(t *testing.T, h http.Handler) (id, token string) {
	t.Helper()
	r := do(t, h, http.MethodPost, "/v1/sessions", "", "")
	if r.status != http.StatusCreated {
		t.Fatalf("POST /v1/sessions: status %d, want 201; body %s", r.status, r.raw)
	}
	return r.str("session_id"), r.str("token")
}

// resume resumes with token and returns the recorded answer.
func resume(t *testing.T, h http.Handler, token string) response {
	t.Helper()
	return do(t, h, http.MethodPost, "/v1/sessions/resume", "", fmt.Sprintf(`{"token":%q}`, token))
}

// mustResume resumes with token, requires success, and returns the new token.
func mustResume(t *testing.T, h http.Handler, token string) string {
	t.Helper()
	r := resume(t, h, token)
	if r.status != http.StatusOK {
		t.Fatalf("resume: status %d, want 200; body %s", r.status, r.raw)
	}
	return r.str("token")
}

var (
	tokenPattern     = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
	sessionIDPattern = regexp.MustCompile(`^s_[0-9a-f]{16}$`)
)

func TestBroker_Start(t *testing.T) {
	b := New(nil)
	seen := map[string]bool{}
	for range 3 {
		r := do(t, b, http.MethodPost, "/v1/sessions", "", "")
		if r.status != http.StatusCreated {
			t.Fatalf("status %d, want 201; body %s", r.status, r.raw)
		}
		id, token := r.str("session_id"), r.str("token")
		if !sessionIDPattern.MatchString(id) {
			t.Errorf("session_id %q does not match %s", id, sessionIDPattern)
		}
		if !tokenPattern.MatchString(token) {
			t.Errorf("token %q does not match %s", token, tokenPattern)
		}
		if resumed, ok := r.body["resumed"].(bool); !ok || resumed {
			t.Errorf("resumed = %v, want false", r.body["resumed"])
		}
		if got := r.header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("Cache-Control = %q, want no-store", got)
		}
		if seen[id] || seen[token] {
			t.Errorf("session %q or its token was issued before", id)
		}
		seen[id], seen[token] = true, true
	}
}

func TestBroker_ResumeRotates(t *testing.T) {
	b := New(nil)
	id, t0 := start(t, b)

	r := resume(t, b, t0)
	if r.status != http.StatusOK {
		t.Fatalf("resume(t0): status %d, want 200; body %s", r.status, r.raw)
	}
	t1 := r.str("token")
	if got := r.str("session_id"); got != id {
		t.Errorf("resume(t0): session_id = %q, want %q", got, id)
	}
	if resumed, _ := r.body["resumed"].(bool); !resumed {
		t.Errorf("resume(t0): resumed = %v, want true", r.body["resumed"])
	}
	if !tokenPattern.MatchString(t1) || t1 == t0 {
		t.Fatalf("resume(t0): token %q, want a fresh token unlike %q", t1, t0)
	}

	// The presented token is retired; the new one is the only one accepted.
	if r := resume(t, b, t0); r.status != http.StatusConflict || r.code() != CodeTokenRotated {
		t.Errorf("resume(t0) again: %d %q, want 409 %q", r.status, r.code(), CodeTokenRotated)
	}
	t2 := mustResume(t, b, t1)
	for _, old := range []string{t0, t1} {
		if r := resume(t, b, old); r.status != http.StatusConflict || r.code() != CodeTokenRotated {
			t.Errorf("resume(old) after t2: %d %q, want 409 %q", r.status, r.code(), CodeTokenRotated)
		}
	}
	if r := resume(t, b, t2); r.status != http.StatusOK || r.str("session_id") != id {
		t.Errorf("resume(t2): %d session %q, want 200 session %q", r.status, r.str("session_id"), id)
	}
}

func TestBroker_ResumeRejects(t *testing.T) {
	b := New(nil)
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantCode   string
	}{
		{"unknown token", `{"token":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, http.StatusUnauthorized, CodeUnknownToken},
		{"token of another shape", `{"token":"not a token at all"}`, http.StatusUnauthorized, CodeUnknownToken},
		{"empty token", `{"token":""}`, http.StatusBadRequest, CodeInvalidRequest},
		{"no token member", `{}`, http.StatusBadRequest, CodeInvalidRequest},
		{"token not a string", `{"token":42}`, http.StatusBadRequest, CodeInvalidRequest},
		{"empty body", ``, http.StatusBadRequest, CodeInvalidRequest},
		{"not JSON", `token=abc`, http.StatusBadRequest, CodeInvalidRequest},
		{"two JSON values", `{"token":"a"}{"token":"b"}`, http.StatusBadRequest, CodeInvalidRequest},
		{"trailing garbage", `{"token":"a"} x`, http.StatusBadRequest, CodeInvalidRequest},
		{"body too large", `{"token":"` + strings.Repeat("a", MaxBodyBytes) + `"}`, http.StatusRequestEntityTooLarge, CodeBodyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, b, http.MethodPost, "/v1/sessions/resume", "", tt.body)
			if r.status != tt.wantStatus || r.code() != tt.wantCode {
				t.Errorf("got %d %q, want %d %q; body %s", r.status, r.code(), tt.wantStatus, tt.wantCode, r.raw)
			}
			if r.str("message") == "" {
				t.Errorf("error body has no message: %s", r.raw)
			}
		})
	}
}

func TestBroker_ResumeExtraMembersIgnored(t *testing.T) {
	b := New(nil)
	_, token := start(t, b)
	r := do(t, b, http.MethodPost, "/v1/sessions/resume", "", fmt.Sprintf(`{"token":%q,"client":"v2"}`, token))
	if r.status != http.StatusOK {
		t.Errorf("status %d, want 200; body %s", r.status, r.raw)
	}
}

func TestBroker_Expiry(t *testing.T) {
	const ttl = time.Hour
	clock := newFakeClock()
	b := New(&Options{TokenTTL: ttl, Now: clock.Now})

	// Every use restarts the TTL.
	_, token := start(t, b)
	clock.Advance(ttl - time.Nanosecond)
	token = mustResume(t, b, token)
	clock.Advance(ttl - time.Nanosecond)
	if r := do(t, b, http.MethodGet, "/v1/notes", token, ""); r.status != http.StatusOK {
		t.Fatalf("GET /v1/notes just before expiry: status %d, want 200; body %s", r.status, r.raw)
	}
	clock.Advance(ttl - time.Nanosecond)
	if r := do(t, b, http.MethodPost, "/v1/notes", token, `{"note":"n"}`); r.status != http.StatusNoContent {
		t.Fatalf("POST /v1/notes just before expiry: status %d, want 204; body %s", r.status, r.raw)
	}

	// Unused for exactly one TTL: expired.
	clock.Advance(ttl)
	if r := resume(t, b, token); r.status != http.StatusGone || r.code() != CodeTokenExpired {
		t.Errorf("resume after TTL: %d %q, want 410 %q", r.status, r.code(), CodeTokenExpired)
	}
	if r := do(t, b, http.MethodGet, "/v1/notes", token, ""); r.status != http.StatusUnauthorized || r.code() != CodeTokenExpired {
		t.Errorf("GET /v1/notes after TTL: %d %q, want 401 %q", r.status, r.code(), CodeTokenExpired)
	}

	// Long after, the broker has forgotten the session.
	clock.Advance(2 * ttl)
	if r := resume(t, b, token); r.status != http.StatusUnauthorized || r.code() != CodeUnknownToken {
		t.Errorf("resume after 3 TTL: %d %q, want 401 %q", r.status, r.code(), CodeUnknownToken)
	}
}

func TestBroker_RotatedTokenForgotten(t *testing.T) {
	const ttl = time.Hour
	clock := newFakeClock()
	b := New(&Options{TokenTTL: ttl, Now: clock.Now})
	_, t0 := start(t, b)
	t1 := mustResume(t, b, t0)

	clock.Advance(ttl / 2)
	t2 := mustResume(t, b, t1) // keeps the session alive
	if r := resume(t, b, t0); r.status != http.StatusConflict {
		t.Errorf("resume(t0) within a TTL of rotation: status %d, want 409", r.status)
	}
	clock.Advance(ttl / 2)
	if r := resume(t, b, t0); r.status != http.StatusUnauthorized || r.code() != CodeUnknownToken {
		t.Errorf("resume(t0) a TTL after rotation: %d %q, want 401 %q", r.status, r.code(), CodeUnknownToken)
	}
	if r := resume(t, b, t2); r.status != http.StatusOK {
		t.Errorf("resume(t2): status %d, want 200; body %s", r.status, r.raw)
	}
}

func TestBroker_NotesFollowResume(t *testing.T) {
	b := New(nil)
	id, t0 := start(t, b)
	_, other := start(t, b)

	for _, note := range []string{"first", "second ✓"} {
		if r := do(t, b, http.MethodPost, "/v1/notes", t0, fmt.Sprintf(`{"note":%q}`, note)); r.status != http.StatusNoContent {
			t.Fatalf("POST /v1/notes: status %d, want 204; body %s", r.status, r.raw)
		}
	}
	if r := do(t, b, http.MethodPost, "/v1/notes", other, `{"note":"other session"}`); r.status != http.StatusNoContent {
		t.Fatalf("POST /v1/notes (other): status %d, want 204; body %s", r.status, r.raw)
	}

	t1 := mustResume(t, b, t0)
	if r := do(t, b, http.MethodPost, "/v1/notes", t1, `{"note":"third"}`); r.status != http.StatusNoContent {
		t.Fatalf("POST /v1/notes after resume: status %d, want 204; body %s", r.status, r.raw)
	}

	r := do(t, b, http.MethodGet, "/v1/notes", t1, "")
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/notes: status %d, want 200; body %s", r.status, r.raw)
	}
	want := map[string]any{"session_id": id, "notes": []any{"first", "second ✓", "third"}}
	if !reflect.DeepEqual(want, r.body) {
		t.Errorf("GET /v1/notes mismatch (-want +got):\n- %v\n+ %v", want, r.body)
	}

	// The retired token no longer reaches the session.
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		r := do(t, b, method, "/v1/notes", t0, `{"note":"stale writer"}`)
		if r.status != http.StatusUnauthorized || r.code() != CodeTokenRotated {
			t.Errorf("%s /v1/notes with t0: %d %q, want 401 %q", method, r.status, r.code(), CodeTokenRotated)
		}
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s /v1/notes with t0: no WWW-Authenticate header", method)
		}
	}
}

func TestBroker_NotesEmpty(t *testing.T) {
	b := New(nil)
	id, token := start(t, b)
	r := do(t, b, http.MethodGet, "/v1/notes", token, "")
	want := map[string]any{"session_id": id, "notes": []any{}}
	if r.status != http.StatusOK || !reflect.DeepEqual(want, r.body) {
		t.Errorf("GET /v1/notes mismatch (-want +got):\n- 200 %v\n+ %d %v", want, r.status, r.body)
	}
}

func TestBroker_NotesRejects(t *testing.T) {
	b := New(nil)
	_, token := start(t, b)
	_, full := start(t, b)
	for i := range MaxNotesPerSession {
		if r := do(t, b, http.MethodPost, "/v1/notes", full, fmt.Sprintf(`{"note":"n%d"}`, i)); r.status != http.StatusNoContent {
			t.Fatalf("note %d: status %d, want 204; body %s", i, r.status, r.raw)
		}
	}

	tests := []struct {
		name       string
		method     string
		header     string // Authorization header
		body       string
		wantStatus int
		wantCode   string
	}{
		{"no header", http.MethodGet, "", "", http.StatusUnauthorized, CodeMissingToken},
		{"basic auth", http.MethodGet, "Basic dXNlcjpwYXNz", "", http.StatusUnauthorized, CodeMissingToken},
		{"bearer without token", http.MethodPost, "Bearer ", `{"note":"n"}`, http.StatusUnauthorized, CodeMissingToken},
		{"unknown token", http.MethodGet, "Bearer nope", "", http.StatusUnauthorized, CodeUnknownToken},
		{"unknown token post", http.MethodPost, "Bearer nope", `{"note":"n"}`, http.StatusUnauthorized, CodeUnknownToken},
		{"empty note", http.MethodPost, "Bearer " + token, `{"note":""}`, http.StatusBadRequest, CodeInvalidRequest},
		{"no note member", http.MethodPost, "Bearer " + token, `{"text":"n"}`, http.StatusBadRequest, CodeInvalidRequest},
		{"note too large", http.MethodPost, "Bearer " + token, `{"note":"` + strings.Repeat("x", MaxNoteBytes+1) + `"}`, http.StatusRequestEntityTooLarge, CodeNoteTooLarge},
		{"body too large", http.MethodPost, "Bearer " + token, `{"note":"` + strings.Repeat("x", MaxBodyBytes) + `"}`, http.StatusRequestEntityTooLarge, CodeBodyTooLarge},
		{"too many notes", http.MethodPost, "Bearer " + full, `{"note":"one more"}`, http.StatusBadRequest, CodeTooManyNotes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/v1/notes", strings.NewReader(tt.body))
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			b.ServeHTTP(rec, req)
			var body errorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body.String(), err)
			}
			if rec.Code != tt.wantStatus || body.Error != tt.wantCode || body.Message == "" {
				t.Errorf("got %d %q %q, want %d %q and a message", rec.Code, body.Error, body.Message, tt.wantStatus, tt.wantCode)
			}
		})
	}

	// A note of exactly MaxNoteBytes is accepted.
	if r := do(t, b, http.MethodPost, "/v1/notes", token, `{"note":"`+strings.Repeat("x", MaxNoteBytes)+`"}`); r.status != http.StatusNoContent {
		t.Errorf("note of MaxNoteBytes: status %d, want 204; body %s", r.status, r.raw)
	}
}

func TestBroker_ResumeConcurrent(t *testing.T) {
	const racers = 32
	b := New(nil)
	id, token := start(t, b)

	// The racers only record; the test goroutine checks, since t.Fatal
	// must not be called from other goroutines.
	var wg sync.WaitGroup
	recs := make([]*httptest.ResponseRecorder, racers)
	begin := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodPost, "/v1/sessions/resume", strings.NewReader(fmt.Sprintf(`{"token":%q}`, token)))
			recs[i] = httptest.NewRecorder()
			<-begin
			b.ServeHTTP(recs[i], req)
		})
	}
	close(begin)
	wg.Wait()

	var winners []string
	for i, rec := range recs {
		r := response{status: rec.Code, raw: rec.Body.String()}
		if err := json.Unmarshal(rec.Body.Bytes(), &r.body); err != nil {
			t.Fatalf("racer %d: body %q: %v", i, r.raw, err)
		}
		switch {
		case r.status == http.StatusOK:
			winners = append(winners, r.str("token"))
			if r.str("session_id") != id {
				t.Errorf("racer %d resumed session %q, want %q", i, r.str("session_id"), id)
			}
		case r.status != http.StatusConflict || r.code() != CodeTokenRotated:
			t.Errorf("racer %d: %d %q, want 200, or 409 %q", i, r.status, r.code(), CodeTokenRotated)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d racers resumed, want exactly 1", len(winners))
	}
	if r := resume(t, b, winners[0]); r.status != http.StatusOK {
		t.Errorf("resume with the winner's token: status %d, want 200; body %s", r.status, r.raw)
	}
}

func TestBroker_ServeHTTP(t *testing.T) {
	b := New(nil)
	tests := []struct {
		method     string
		path       string
		wantStatus int
		wantCode   string
		wantAllow  string
	}{
		{http.MethodGet, "/healthz", http.StatusOK, "", ""},
		{http.MethodHead, "/healthz", http.StatusOK, "", ""},
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed, CodeMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/v1/sessions", http.StatusMethodNotAllowed, CodeMethodNotAllowed, "POST"},
		{http.MethodGet, "/v1/sessions/resume", http.StatusMethodNotAllowed, CodeMethodNotAllowed, "POST"},
		{http.MethodDelete, "/v1/notes", http.StatusMethodNotAllowed, CodeMethodNotAllowed, "GET, POST"},
		{http.MethodGet, "/", http.StatusNotFound, CodeNotFound, ""},
		{http.MethodPost, "/v1/sessions/", http.StatusNotFound, CodeNotFound, ""},
		{http.MethodPost, "/v2/sessions", http.StatusNotFound, CodeNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := do(t, b, tt.method, tt.path, "", "")
			if r.status != tt.wantStatus || r.code() != tt.wantCode {
				t.Errorf("got %d %q, want %d %q; body %s", r.status, r.code(), tt.wantStatus, tt.wantCode, r.raw)
			}
			if got := r.header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
		})
	}
}

func TestBroker_LogsNoTokens(t *testing.T) {
	var logs bytes.Buffer
	for _, handler := range []slog.Handler{
		slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}),
		slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}),
	} {
		logs.Reset()
		b := New(&Options{Logger: slog.New(handler)})
		_, t0 := start(t, b)
		t1 := mustResume(t, b, t0)
		do(t, b, http.MethodPost, "/v1/notes", t1, `{"note":"n"}`)
		do(t, b, http.MethodGet, "/v1/notes", t0, "")
		resume(t, b, t0)
		resume(t, b, "unknown-token-value")

		out := logs.String()
		for _, secret := range []string{t0, t1, "unknown-token-value"} {
			if strings.Contains(out, secret) {
				t.Errorf("log contains a token:\n%s", out)
			}
		}
		prefix := fmt.Sprint(hashToken(t1).LogValue())
		if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(prefix) || !strings.Contains(out, prefix) {
			t.Errorf("log does not identify token t1 by its digest prefix %q:\n%s", prefix, out)
		}
		for _, msg := range []string{"session started", "session resumed", "resume rejected", "bearer token rejected", "note added"} {
			if !strings.Contains(out, msg) {
				t.Errorf("log lacks %q:\n%s", msg, out)
			}
		}
	}
}

func TestNew_Defaults(t *testing.T) {
	for _, opts := range []*Options{nil, {}, {TokenTTL: -time.Second}} {
		b := New(opts)
		if b.ttl != DefaultTokenTTL {
			t.Errorf("New(%+v).ttl = %s, want %s", opts, b.ttl, DefaultTokenTTL)
		}
		if b.now == nil || b.logger == nil {
			t.Errorf("New(%+v) left the clock or logger nil", opts)
		}
	}
}
