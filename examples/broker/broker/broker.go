// Package broker implements the demo token broker of mcp-resume: an
// in-memory HTTP service that hands out MCP sessions as bearer tokens,
// rotates the token on every resume, and keeps a list of notes (the agent
// context that a resume preserves) per session.
//
// The wire protocol is specified in examples/broker/README.md; this package
// is its reference implementation. It is a demo: state lives in memory only
// and is lost when the process exits.
//
// One file of about 590 lines: the handlers, the session table and the token
// rotation share one lock and one set of invariants, read best together.
//
// # Tokens
//
// A token is 32 random bytes encoded as base64url without padding (43
// visible ASCII characters). Only the current token of a session is
// accepted. A successful resume issues a new token and retires the presented
// one, so of several clients racing to resume with one token exactly one
// wins; the others are told the token was rotated. A session's current token
// expires when it has not been used (issued, resumed, or presented to the
// notes endpoints) for [Options.TokenTTL].
//
// The broker keeps only SHA-256 digests of tokens, and it logs at most an
// 8-hex-digit prefix of such a digest, never a token.
package broker

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Defaults and limits of the protocol.
const (
	// DefaultTokenTTL is the token time-to-live used when
	// [Options.TokenTTL] is zero or negative.
	DefaultTokenTTL = 24 * time.Hour

	// MaxBodyBytes is the largest request body, in bytes, that the broker
	// reads; a larger body is answered 413 with [CodeBodyTooLarge].
	MaxBodyBytes = 64 << 10

	// MaxNoteBytes is the largest note, in bytes of UTF-8, that the broker
	// stores; a larger note is answered 413 with [CodeNoteTooLarge].
	MaxNoteBytes = 4 << 10

	// MaxNotesPerSession is the number of notes a session can hold; adding
	// one more is answered 400 with [CodeTooManyNotes].
	MaxNotesPerSession = 1000

	// tokenBytes is the number of random bytes in a token.
	tokenBytes = 32

	// sessionIDBytes is the number of random bytes in a session ID.
	sessionIDBytes = 8

	// maxSweepInterval bounds how long the broker waits between two sweeps
	// of forgotten sessions and tokens.
	maxSweepInterval = time.Minute
)

// Error codes: the value of the "error" member of every JSON error body the
// broker sends. Clients branch on these, never on the "message" text.
const (
	// CodeUnknownToken means the token was never issued by this broker or
	// has been forgotten. Status 401.
	CodeUnknownToken = "unknown_token"

	// CodeTokenRotated means the token was valid once but a later resume
	// replaced it; only the newest token of a session is accepted. Status
	// 409 from the resume endpoint, 401 from the notes endpoints.
	CodeTokenRotated = "token_rotated"

	// CodeTokenExpired means the token is the current one of its session but
	// was not used within the token TTL. Status 410 from the resume
	// endpoint, 401 from the notes endpoints.
	CodeTokenExpired = "token_expired"

	// CodeMissingToken means the Authorization header is absent or is not a
	// "Bearer" credential. Status 401.
	CodeMissingToken = "missing_token"

	// CodeInvalidRequest means the request body is not the JSON the endpoint
	// expects, or a required member is missing or empty. Status 400.
	CodeInvalidRequest = "invalid_request"

	// CodeBodyTooLarge means the request body exceeds [MaxBodyBytes].
	// Status 413.
	CodeBodyTooLarge = "body_too_large"

	// CodeNoteTooLarge means a note exceeds [MaxNoteBytes]. Status 413.
	CodeNoteTooLarge = "note_too_large"

	// CodeTooManyNotes means the session already holds
	// [MaxNotesPerSession] notes. Status 400.
	CodeTooManyNotes = "too_many_notes"

	// CodeNotFound means no endpoint has the requested path. Status 404.
	CodeNotFound = "not_found"

	// CodeMethodNotAllowed means the endpoint exists but not for the
	// request method; the Allow header lists the methods it takes. Status
	// 405.
	CodeMethodNotAllowed = "method_not_allowed"
)

// Reasons a token is refused, used between the token lookup and the HTTP
// layer.
var (
	// errUnknownToken is returned when no session has ever had the token,
	// or the broker has forgotten it.
	errUnknownToken = errors.New("unknown token")

	// errTokenRotated is returned when the token belonged to a session but
	// has since been replaced by a resume.
	errTokenRotated = errors.New("token rotated")

	// errTokenExpired is returned when the token is the current one of its
	// session but was not used within the TTL.
	errTokenExpired = errors.New("token expired")

	// errTooManyNotes is returned when a session already holds
	// MaxNotesPerSession notes.
	errTooManyNotes = errors.New("too many notes")
)

// Options configures a [Broker]. A nil *Options is valid and means all
// defaults.
type Options struct {
	// TokenTTL is how long a session's current token stays valid without
	// being used. Every use (issue, resume, notes request) restarts the
	// period. Zero or negative means [DefaultTokenTTL].
	//
	// The broker also remembers rotated and expired tokens for at least one
	// further TTL, so it can answer 409 or 410 rather than 401 for them;
	// after that they may be forgotten and answered as unknown.
	TokenTTL time.Duration

	// Now returns the current time. Nil means [time.Now]. Tests inject a
	// fake clock here to expire tokens without sleeping.
	Now func() time.Time

	// Logger receives one record per session event (start, resume, resume
	// rejected, note added). Records identify tokens by an 8-hex-digit
	// SHA-256 prefix, never by value. Nil means no logging.
	Logger *slog.Logger
}

// Broker is the token broker as an [http.Handler]. Create it with [New]. It
// keeps all state in memory and is safe for concurrent use by multiple
// goroutines.
type Broker struct {
	ttl    time.Duration
	now    func() time.Time
	logger *slog.Logger

	mu        sync.Mutex
	sessions  map[string]*session        // by session ID
	tokens    map[tokenHash]*tokenRecord // by SHA-256 of the token
	nextSweep time.Time
}

// tokenHash is the SHA-256 digest of a token. The broker stores and compares
// digests only.
type tokenHash [sha256.Size]byte

// LogValue implements [slog.LogValuer]: a token is logged as the first 8 hex
// digits of its digest, which identify it without revealing it.
func (h tokenHash) LogValue() slog.Value { return slog.StringValue(hex.EncodeToString(h[:4])) }

// session is the state of one session. Guarded by Broker.mu.
type session struct {
	id       string
	current  tokenHash // the only token accepted for this session
	lastUsed time.Time // when the current token was issued or last used
	notes    []string
}

// tokenRecord is what the broker knows about one token it issued. Guarded
// by Broker.mu.
type tokenRecord struct {
	session *session
	// rotatedAt is when a resume replaced this token; zero while the token
	// is the session's current one.
	rotatedAt time.Time
}

// New returns a Broker configured by opts, which may be nil.
func New(opts *Options) *Broker {
	if opts == nil {
		opts = &Options{}
	}
	b := &Broker{
		ttl:      opts.TokenTTL,
		now:      opts.Now,
		logger:   opts.Logger,
		sessions: make(map[string]*session),
		tokens:   make(map[tokenHash]*tokenRecord),
	}
	if b.ttl <= 0 {
		b.ttl = DefaultTokenTTL
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.logger == nil {
		b.logger = slog.New(slog.DiscardHandler)
	}
	return b
}

// ServeHTTP routes a request to one of the broker's endpoints:
//
//	POST /v1/sessions         start a session
//	POST /v1/sessions/resume  resume a session, rotating its token
//	POST /v1/notes            add a note to the bearer token's session
//	GET  /v1/notes            list the notes of the bearer token's session
//	GET  /healthz             liveness check
//
// Any other path is answered 404 and any other method 405, both with a JSON
// error body.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var handler http.HandlerFunc
	var allow string
	switch r.URL.Path {
	case "/healthz":
		allow = "GET, HEAD"
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			handler = b.serveHealth
		}
	case "/v1/sessions":
		allow = "POST"
		if r.Method == http.MethodPost {
			handler = b.serveStart
		}
	case "/v1/sessions/resume":
		allow = "POST"
		if r.Method == http.MethodPost {
			handler = b.serveResume
		}
	case "/v1/notes":
		allow = "GET, POST"
		switch r.Method {
		case http.MethodGet:
			handler = b.serveListNotes
		case http.MethodPost:
			handler = b.serveAddNote
		}
	default:
		writeError(w, http.StatusNotFound, CodeNotFound,
			fmt.Sprintf("no endpoint at %q; see the protocol in examples/broker/README.md", r.URL.Path))
		return
	}
	if handler == nil {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			fmt.Sprintf("%s does not accept %s; use %s", r.URL.Path, r.Method, allow))
		return
	}
	handler(w, r)
}

// sessionResponse is the body of a successful start or resume.
type sessionResponse struct {
	SessionID string `json:"session_id"`
	Token     string `json:"token"`
	Resumed   bool   `json:"resumed"`
}

// resumeRequest is the body of POST /v1/sessions/resume.
type resumeRequest struct {
	Token string `json:"token"`
}

// noteRequest is the body of POST /v1/notes.
type noteRequest struct {
	Note string `json:"note"`
}

// notesResponse is the body of GET /v1/notes.
type notesResponse struct {
	SessionID string   `json:"session_id"`
	Notes     []string `json:"notes"`
}

// errorResponse is the body of every error answer.
type errorResponse struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func (b *Broker) serveHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// serveStart handles POST /v1/sessions. The request body is ignored.
func (b *Broker) serveStart(w http.ResponseWriter, _ *http.Request) {
	id := newSessionID()
	token, hash := newToken()

	b.mu.Lock()
	now := b.now()
	b.sweepLocked(now)
	s := &session{id: id, current: hash, lastUsed: now}
	b.sessions[id] = s
	b.tokens[hash] = &tokenRecord{session: s}
	b.mu.Unlock()

	b.logger.Info("session started", "session_id", id, "token_sha256", hash)
	writeJSON(w, http.StatusCreated, sessionResponse{SessionID: id, Token: token})
}

// serveResume handles POST /v1/sessions/resume.
func (b *Broker) serveResume(w http.ResponseWriter, r *http.Request) {
	var req resumeRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Token == "" {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest,
			`the body must be a JSON object with a non-empty string member "token"`)
		return
	}
	presented := hashToken(req.Token)
	token, hash := newToken()

	id, err := b.rotate(presented, hash)
	if err != nil {
		b.logger.Info("resume rejected", "reason", err.Error(), "token_sha256", presented)
		switch {
		case errors.Is(err, errTokenRotated):
			writeError(w, http.StatusConflict, CodeTokenRotated,
				"this token was replaced by a later resume; only the newest token of a session is accepted; start a new session")
		case errors.Is(err, errTokenExpired):
			writeError(w, http.StatusGone, CodeTokenExpired,
				fmt.Sprintf("this token was not used within %s and has expired; start a new session", b.ttl))
		default:
			writeError(w, http.StatusUnauthorized, CodeUnknownToken,
				"the broker does not know this token; start a new session")
		}
		return
	}
	b.logger.Info("session resumed", "session_id", id, "old_token_sha256", presented, "token_sha256", hash)
	writeJSON(w, http.StatusOK, sessionResponse{SessionID: id, Token: token, Resumed: true})
}

// rotate makes next the current token of the session whose current token is
// presented, and retires presented. It returns the session ID, or
// errUnknownToken, errTokenRotated or errTokenExpired.
func (b *Broker) rotate(presented, next tokenHash) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.sweepLocked(now)
	s, err := b.lookupLocked(presented, now)
	if err != nil {
		return "", err
	}
	b.tokens[presented].rotatedAt = now
	s.current = next
	s.lastUsed = now
	b.tokens[next] = &tokenRecord{session: s}
	return s.id, nil
}

// serveAddNote handles POST /v1/notes.
func (b *Broker) serveAddNote(w http.ResponseWriter, r *http.Request) {
	presented, ok := bearerToken(w, r)
	if !ok {
		return
	}
	var req noteRequest
	if !decodeBody(w, r, &req) {
		return
	}
	switch {
	case req.Note == "":
		writeError(w, http.StatusBadRequest, CodeInvalidRequest,
			`the body must be a JSON object with a non-empty string member "note"`)
		return
	case len(req.Note) > MaxNoteBytes:
		writeError(w, http.StatusRequestEntityTooLarge, CodeNoteTooLarge,
			fmt.Sprintf("the note is %d bytes; a note may be at most %d bytes of UTF-8", len(req.Note), MaxNoteBytes))
		return
	}

	b.mu.Lock()
	now := b.now()
	b.sweepLocked(now)
	s, err := b.lookupLocked(presented, now)
	if err == nil {
		if len(s.notes) >= MaxNotesPerSession {
			err = errTooManyNotes
		} else {
			s.notes = append(s.notes, req.Note)
			s.lastUsed = now
		}
	}
	b.mu.Unlock()

	if err != nil {
		if errors.Is(err, errTooManyNotes) {
			writeError(w, http.StatusBadRequest, CodeTooManyNotes,
				fmt.Sprintf("the session already holds the maximum of %d notes", MaxNotesPerSession))
			return
		}
		b.writeTokenError(w, presented, err)
		return
	}
	b.logger.Debug("note added", "session_id", s.id, "bytes", len(req.Note))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// serveListNotes handles GET /v1/notes.
func (b *Broker) serveListNotes(w http.ResponseWriter, r *http.Request) {
	presented, ok := bearerToken(w, r)
	if !ok {
		return
	}

	b.mu.Lock()
	now := b.now()
	b.sweepLocked(now)
	s, err := b.lookupLocked(presented, now)
	var resp notesResponse
	if err == nil {
		s.lastUsed = now
		resp = notesResponse{SessionID: s.id, Notes: append([]string{}, s.notes...)}
	}
	b.mu.Unlock()

	if err != nil {
		b.writeTokenError(w, presented, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// writeTokenError answers 401 for a bearer token that lookupLocked refused
// with err.
func (b *Broker) writeTokenError(w http.ResponseWriter, presented tokenHash, err error) {
	b.logger.Info("bearer token rejected", "reason", err.Error(), "token_sha256", presented)
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	switch {
	case errors.Is(err, errTokenRotated):
		writeError(w, http.StatusUnauthorized, CodeTokenRotated,
			"this token was replaced by a later resume; only the newest token of a session is accepted")
	case errors.Is(err, errTokenExpired):
		writeError(w, http.StatusUnauthorized, CodeTokenExpired,
			fmt.Sprintf("this token was not used within %s and has expired", b.ttl))
	default:
		writeError(w, http.StatusUnauthorized, CodeUnknownToken, "the broker does not know this token")
	}
}

// lookupLocked returns the session whose current, unexpired token has
// digest h, or errUnknownToken, errTokenRotated or errTokenExpired. The
// caller holds b.mu.
func (b *Broker) lookupLocked(h tokenHash, now time.Time) (*session, error) {
	rec, ok := b.tokens[h]
	switch {
	case !ok:
		return nil, errUnknownToken
	case rec.session.current != h:
		return nil, errTokenRotated
	case !now.Before(rec.session.lastUsed.Add(b.ttl)):
		return nil, errTokenExpired
	}
	return rec.session, nil
}

// sweepLocked forgets sessions whose token expired more than one TTL ago
// and tokens rotated more than one TTL ago. It does the work at most once
// per min(TTL, one minute) of clock time, so its cost is amortised over
// requests. The caller holds b.mu.
func (b *Broker) sweepLocked(now time.Time) {
	if now.Before(b.nextSweep) {
		return
	}
	b.nextSweep = now.Add(min(b.ttl, maxSweepInterval))
	for h, rec := range b.tokens {
		if !rec.rotatedAt.IsZero() && !now.Before(rec.rotatedAt.Add(b.ttl)) {
			delete(b.tokens, h)
		}
	}
	for id, s := range b.sessions {
		if !now.Before(s.lastUsed.Add(2 * b.ttl)) {
			delete(b.tokens, s.current)
			delete(b.sessions, id)
		}
	}
}

// bearerToken returns the digest of the bearer token in r's Authorization
// header. If there is none it answers 401 and returns false.
func bearerToken(w http.ResponseWriter, r *http.Request) (tokenHash, bool) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeError(w, http.StatusUnauthorized, CodeMissingToken,
			`send the session token in the header "Authorization: Bearer <token>"`)
		return tokenHash{}, false
	}
	return hashToken(token), true
}

// decodeBody decodes r's JSON body, at most MaxBodyBytes, into v. On failure
// it answers 400 or 413 and returns false. Unknown members are ignored.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	err := dec.Decode(v)
	if err == nil {
		// Exactly one JSON value: anything but white space after it is an
		// error.
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("unexpected data after the JSON object")
			if extra != nil {
				err = extra
			}
		}
	}
	if err == nil {
		return true
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
			fmt.Sprintf("the request body exceeds %d bytes", MaxBodyBytes))
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "the request body is empty; send a JSON object")
	default:
		writeError(w, http.StatusBadRequest, CodeInvalidRequest,
			fmt.Sprintf("the request body is not the expected JSON object: %v", err))
	}
	return false
}

// writeJSON answers status with v as JSON. Answers are never cached: they may
// carry tokens.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode appends a newline
		// Only the fixed types of this package are encoded.
		panic(fmt.Sprintf("broker: encode %T: %v", v, err))
	}
	body := buf.Bytes()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers status with a JSON error body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorResponse{Error: code, Message: message})
}

// newToken returns a fresh token and its digest.
func newToken() (string, tokenHash) {
	var raw [tokenBytes]byte
	_, _ = rand.Read(raw[:]) // never fails; see crypto/rand.Read
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	return token, hashToken(token)
}

// newSessionID returns "s_" followed by 16 random hex digits.
func newSessionID() string {
	var raw [sessionIDBytes]byte
	_, _ = rand.Read(raw[:]) // never fails; see crypto/rand.Read
	return "s_" + hex.EncodeToString(raw[:])
}

// hashToken returns the digest under which the broker stores token.
func hashToken(token string) tokenHash { return sha256.Sum256([]byte(token)) }
