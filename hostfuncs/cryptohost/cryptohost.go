// Package cryptohost is the Go implementation of the host function
// mcp_resume_crypto (hostfuncs/README.md, "mcp_resume_crypto"): HKDF-SHA256,
// HMAC-SHA256, SHA-256 and AES-256-GCM from Go's standard library, and reading or
// writing a sealed file through the host's own file primitives. The Go host
// (host/internal/primitives) serves the plugin with it, and the plugin's
// native test host (plugin/internal/testhost) runs the same code, so both
// compute exactly what the contract says. It holds no policy: every key,
// nonce, associated data and file name comes from the request.
package cryptohost

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// Files is what read_open and seal_write need of a host: its
// mcp_resume_read and mcp_resume_write, with the same name rule, flags and
// error codes.
type Files interface {
	// ReadFile answers as mcp_resume_read: the first min(size, limit)
	// bytes of the state directory's regular file name.
	ReadFile(name string, limit int) ([]byte, *hostfuncs.Error)
	// WriteFile acts as mcp_resume_write: data to temp (O_EXCL,
	// O_NOFOLLOW, 0600), then renamed over name.
	WriteFile(name, temp string, data []byte) *hostfuncs.Error
}

// Serve answers one mcp_resume_crypto request: the status byte and output
// of the README's table, or the JSON error object (invalid_request for a
// malformed request, the file functions' codes for read_open and
// seal_write). It never panics; files may be nil for a host without a
// state directory (read_open and seal_write then answer invalid_request).
func Serve(req []byte, files Files) []byte {
	q, werr := hostfuncs.DecodeCryptoRequest(req)
	if werr != nil {
		return failure(werr)
	}
	out := []byte{hostfuncs.CryptoStatusOK}
	switch q.Op {
	case hostfuncs.CryptoOpHKDF:
		for _, it := range q.HKDF {
			// hkdf.Key fails only for a length over 255 blocks, refused above.
			k, _ := hkdf.Key(sha256.New, it.IKM, it.Salt, string(it.Info), it.Length)
			out = append(out, k...)
		}
	case hostfuncs.CryptoOpHMAC:
		for _, it := range q.HMAC {
			m := hmac.New(sha256.New, it.Key)
			m.Write(it.Message)
			out = m.Sum(out)
		}
	case hostfuncs.CryptoOpSHA256:
		for _, m := range q.Messages {
			sum := sha256.Sum256(m)
			out = append(out, sum[:]...)
		}
	case hostfuncs.CryptoOpSeal:
		out = gcm(&q.Key).Seal(out, q.Nonce[:], q.Data, q.AAD)
	case hostfuncs.CryptoOpOpen:
		plain, err := gcm(&q.Key).Open(out, q.Nonce[:], q.Data, q.AAD)
		if err != nil {
			return []byte{hostfuncs.CryptoStatusNoOpen}
		}
		out = plain
	case hostfuncs.CryptoOpReadOpen:
		if files == nil {
			return failure(&hostfuncs.Error{Code: hostfuncs.CodeInvalidRequest, Message: "mcp_resume_crypto read_open: this host has no state directory"})
		}
		data, werr := files.ReadFile(q.Name, q.Limit)
		if werr != nil {
			return failure(werr)
		}
		if len(data) < q.HeaderLen+hostfuncs.CryptoTagLen {
			return append([]byte{hostfuncs.CryptoStatusNoOpen}, data[:min(len(data), q.HeaderLen)]...)
		}
		header := data[:q.HeaderLen]
		aad := append(q.AAD[:len(q.AAD):len(q.AAD)], header...)
		out = append(out, header...)
		plain, err := gcm(&q.Key).Open(out, header[q.NonceAt:q.NonceAt+hostfuncs.CryptoNonceLen], data[q.HeaderLen:], aad)
		if err != nil {
			return append([]byte{hostfuncs.CryptoStatusNoOpen}, header...)
		}
		out = plain
	case hostfuncs.CryptoOpSealWrite:
		if files == nil {
			return failure(&hostfuncs.Error{Code: hostfuncs.CodeInvalidRequest, Message: "mcp_resume_crypto seal_write: this host has no state directory"})
		}
		aad := append(q.AAD[:len(q.AAD):len(q.AAD)], q.Header...)
		data := make([]byte, 0, len(q.Header)+len(q.Data)+hostfuncs.CryptoTagLen)
		data = append(data, q.Header...)
		data = gcm(&q.Key).Seal(data, q.Nonce[:], q.Data, aad)
		if werr := files.WriteFile(q.Name, q.Temp, data); werr != nil {
			return failure(werr)
		}
	}
	return out
}

// gcm is AES-256-GCM under key (a 32-byte key cannot fail either call).
func gcm(key *[hostfuncs.CryptoKeyLen]byte) cipher.AEAD {
	block, _ := aes.NewCipher(key[:])
	a, _ := cipher.NewGCM(block)
	return a
}

// failure is the JSON error object of werr.
func failure(werr *hostfuncs.Error) []byte {
	b, err := json.Marshal(hostfuncs.Empty{Error: werr})
	if err != nil {
		return []byte(`{"error":{"code":"io","message":"cannot encode an error"}}`)
	}
	return b
}
