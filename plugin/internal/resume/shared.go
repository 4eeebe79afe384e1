package resume

// What the handle store (plugin/internal/handles) shares with the resume
// store: the random source, the state directory's checks and the host call
// with its error handling, so that both stores judge directories and talk
// to hosts by one set of rules.

import "github.com/mcp-resume/mcp-resume/hostfuncs"

// ReadRandom fills b from the guest's random source (WASI random_get in the
// plugin, which every host wires to the OS CSPRNG; crypto/rand natively)
// and reports whether it could; on false, b must not be used.
func ReadRandom(b []byte) bool { return readRandom(b) }

// PrepareDir creates the directory dir if missing (and its missing
// parents, 0700) and judges it as the resume store judges its state
// directory (prepareDir): a real directory owned by euid with no group or
// other bits, inside directories up to the state root root ("" for none)
// that no group or other user may write in without the sticky bit. The
// error is a *hostfuncs.Error worded by dir.go's rules.
func PrepareDir(call Caller, dir, root string, euid int) *hostfuncs.Error {
	s := &Store{call: call, cfg: Config{StateDir: dir, StateRoot: root}, facts: hostfuncs.Facts{EUID: euid}}
	_, werr := s.prepareDir(true)
	return werr
}

// Invoke calls host function fn with req as JSON (padded, hostfuncs.Pad8)
// and decodes the answer into resp. It returns the host's *hostfuncs.Error
// when the answer carries one (errField points into resp), or a
// hostfuncs.CodeIO error for an answer that is not JSON.
func Invoke(call Caller, fn string, req interface{ EncodeJSON() ([]byte, error) }, resp interface{ DecodeJSON(b []byte) error }, errField **hostfuncs.Error) error {
	return (&Store{call: call}).invoke(fn, req, resp, errField)
}

// HostFacts asks the host for its facts (mcp_resume_facts) and reports
// whether the answer is usable (JSON, no error, a pid).
func HostFacts(call Caller) (hostfuncs.Facts, bool) {
	var f hostfuncs.Facts
	out := call(hostfuncs.FnFacts, hostfuncs.Pad8([]byte("{}")))
	ok := f.DecodeJSON(out) == nil && f.Error == nil && f.PID > 0
	return f, ok
}

// Log sends one line to the host's logger (mcp_resume_log): level one of
// hostfuncs.Level*, event a stable name, msg the human text, detail
// optional context; none of them ever holds a secret. A failing logger is
// ignored.
func Log(call Caller, level, event, msg, detail string) {
	req, _ := hostfuncs.LogRequest{Level: level, Event: event, Message: msg, Detail: detail}.EncodeJSON()
	call(hostfuncs.FnLog, hostfuncs.Pad8(req))
}

// OpenInputError is the error of an open input (open, handles_open) that
// did not decode: an *hostfuncs.OptionError in its own words with the
// option named by n, code invalid_app for the app and invalid_option for
// the rest; anything else (not JSON, not an object) invalid_option, prefix
// then the decoder's message.
func OpenInputError(err error, prefix string, n Names) *hostfuncs.Error {
	if oe, ok := err.(*hostfuncs.OptionError); ok {
		code := hostfuncs.CodeInvalidOption
		if oe.Option == "app" {
			code = hostfuncs.CodeInvalidApp
		}
		named := *oe
		named.Option = n.Option(oe.Option)
		return &hostfuncs.Error{Code: code, Message: named.Error()}
	}
	return &hostfuncs.Error{Code: hostfuncs.CodeInvalidOption, Message: prefix + err.Error()}
}

// Crypto calls mcp_resume_crypto with a binary request built by the
// hostfuncs encoders (HKDFRequest, HMACRequest, SealRequest, OpenRequest,
// ReadOpenRequest, SealWriteRequest), sent as is (not padded: the layout
// has exact lengths). It returns the status (hostfuncs.CryptoStatusOK or
// CryptoStatusNoOpen) and the output that follows it, or the host's
// *hostfuncs.Error (a file code for read_open and seal_write,
// invalid_request, or io for a response that cannot be read).
func Crypto(call Caller, req []byte) (byte, []byte, *hostfuncs.Error) {
	return hostfuncs.ParseCryptoResponse(call(hostfuncs.FnCrypto, req))
}
