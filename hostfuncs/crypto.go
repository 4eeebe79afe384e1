package hostfuncs

// The binary request and response of mcp_resume_crypto (hostfuncs/README.md,
// "mcp_resume_crypto"): the plugin's encoders and response parser, and the
// request decoder Go hosts use (package cryptohost). Pure byte layout: no
// cryptography here, so the plugin links none.

import (
	"encoding/binary"
	"strconv"
)

// HKDFItem is one derivation of a CryptoOpHKDF batch: HKDF-SHA256 of IKM
// with Salt and Info, Length bytes (1..CryptoMaxHKDFLen).
type HKDFItem struct {
	IKM, Salt, Info []byte
	Length          int
}

// HMACItem is one tag of a CryptoOpHMAC batch: HMAC-SHA256 of Message
// under Key (32 bytes out).
type HMACItem struct {
	Key, Message []byte
}

func appendB16(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
	return append(b, v...)
}

func appendB32(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// HKDFRequest is the request of an hkdf batch (1..CryptoMaxBatch items;
// the caller keeps to the bounds, a host refuses anything else).
func HKDFRequest(items ...HKDFItem) []byte {
	b := []byte{CryptoOpHKDF, byte(len(items))}
	for _, it := range items {
		b = appendB16(b, it.IKM)
		b = appendB16(b, it.Salt)
		b = appendB16(b, it.Info)
		b = binary.BigEndian.AppendUint16(b, uint16(it.Length))
	}
	return b
}

// HMACRequest is the request of an hmac batch (1..CryptoMaxBatch items).
func HMACRequest(items ...HMACItem) []byte {
	b := []byte{CryptoOpHMAC, byte(len(items))}
	for _, it := range items {
		b = appendB16(b, it.Key)
		b = appendB32(b, it.Message)
	}
	return b
}

// SHA256Request is the request of a sha256 batch (1..CryptoMaxBatch
// messages).
func SHA256Request(messages ...[]byte) []byte {
	b := []byte{CryptoOpSHA256, byte(len(messages))}
	for _, m := range messages {
		b = appendB32(b, m)
	}
	return b
}

// SealRequest is the request to seal plaintext with AES-256-GCM under key
// and nonce, with associated data aad.
func SealRequest(key *[CryptoKeyLen]byte, nonce *[CryptoNonceLen]byte, aad, plaintext []byte) []byte {
	b := make([]byte, 0, 1+CryptoKeyLen+CryptoNonceLen+4+len(aad)+len(plaintext))
	b = append(b, CryptoOpSeal)
	b = append(b, key[:]...)
	b = append(b, nonce[:]...)
	b = appendB32(b, aad)
	return append(b, plaintext...)
}

// OpenRequest is the request to open sealed (ciphertext and tag) with
// AES-256-GCM under key and nonce, with associated data aad.
func OpenRequest(key *[CryptoKeyLen]byte, nonce *[CryptoNonceLen]byte, aad, sealed []byte) []byte {
	b := make([]byte, 0, 1+CryptoKeyLen+CryptoNonceLen+4+len(aad)+len(sealed))
	b = append(b, CryptoOpOpen)
	b = append(b, key[:]...)
	b = append(b, nonce[:]...)
	b = appendB32(b, aad)
	return append(b, sealed...)
}

// ReadOpenRequest is the request to read the state directory's file name
// (at most limit bytes) and open it under key: its first headerLen bytes
// are the header, the nonce is at nonceAt in the header, the associated
// data is aadPrefix followed by the header.
func ReadOpenRequest(key *[CryptoKeyLen]byte, name string, limit uint32, headerLen, nonceAt uint16, aadPrefix []byte) []byte {
	b := make([]byte, 0, 1+CryptoKeyLen+2+len(name)+4+2+2+4+len(aadPrefix))
	b = append(b, CryptoOpReadOpen)
	b = append(b, key[:]...)
	b = appendB16(b, []byte(name))
	b = binary.BigEndian.AppendUint32(b, limit)
	b = binary.BigEndian.AppendUint16(b, headerLen)
	b = binary.BigEndian.AppendUint16(b, nonceAt)
	return appendB32(b, aadPrefix)
}

// SealWriteRequest is the request to seal plaintext under key and nonce
// (associated data aadPrefix followed by header) and write header, the
// ciphertext and its tag to the state directory's file name through the
// temporary file temp.
func SealWriteRequest(key *[CryptoKeyLen]byte, nonce *[CryptoNonceLen]byte, name, temp string, header, aadPrefix, plaintext []byte) []byte {
	b := make([]byte, 0, 1+CryptoKeyLen+CryptoNonceLen+4+len(name)+len(temp)+8+len(header)+len(aadPrefix)+len(plaintext))
	b = append(b, CryptoOpSealWrite)
	b = append(b, key[:]...)
	b = append(b, nonce[:]...)
	b = appendB16(b, []byte(name))
	b = appendB16(b, []byte(temp))
	b = appendB32(b, header)
	b = appendB32(b, aadPrefix)
	return append(b, plaintext...)
}

// ParseCryptoResponse splits an mcp_resume_crypto response into its status
// (CryptoStatusOK or CryptoStatusNoOpen) and what follows it. A failure
// answer gives its *Error; an empty or unknown response gives a CodeIO
// *Error (the plugin then reads it as "cannot tell").
func ParseCryptoResponse(resp []byte) (byte, []byte, *Error) {
	if len(resp) == 0 {
		return 0, nil, &Error{Code: CodeIO, Message: "mcp_resume_crypto gave an empty response"}
	}
	switch resp[0] {
	case CryptoStatusOK, CryptoStatusNoOpen:
		return resp[0], resp[1:], nil
	case CryptoStatusJSONFail:
		var e Empty
		if err := e.DecodeJSON(resp); err != nil || e.Error == nil {
			return 0, nil, &Error{Code: CodeIO, Message: "mcp_resume_crypto gave a failure that is not the JSON error object"}
		}
		return 0, nil, e.Error
	}
	return 0, nil, &Error{Code: CodeIO, Message: "mcp_resume_crypto gave a response of unknown status " + strconv.Itoa(int(resp[0]))}
}

// CryptoRequest is a decoded mcp_resume_crypto request, for Go hosts. Only
// the fields of Op are set.
type CryptoRequest struct {
	Op        byte
	HKDF      []HKDFItem
	HMAC      []HMACItem
	Messages  [][]byte // sha256
	Key       [CryptoKeyLen]byte
	Nonce     [CryptoNonceLen]byte
	AAD       []byte // seal, open; read_open and seal_write: the prefix
	Data      []byte // seal, seal_write: the plaintext; open: the sealed bytes
	Name      string // read_open, seal_write
	Temp      string // seal_write
	Header    []byte // seal_write
	Limit     int    // read_open
	HeaderLen int    // read_open
	NonceAt   int    // read_open
}

// byteReader walks a binary request; any read past the end sets bad.
type byteReader struct {
	b   []byte
	bad string
}

func (r *byteReader) take(n int, what string) []byte {
	if r.bad != "" {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.bad = what + " runs past the end of the request"
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *byteReader) u8(what string) int {
	v := r.take(1, what)
	if v == nil {
		return 0
	}
	return int(v[0])
}

func (r *byteReader) u16(what string) int {
	v := r.take(2, what)
	if v == nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(v))
}

func (r *byteReader) u32(what string) int {
	v := r.take(4, what)
	if v == nil {
		return 0
	}
	return int(binary.BigEndian.Uint32(v))
}

func (r *byteReader) b16(what string) []byte { return r.take(r.u16(what+"'s length"), what) }
func (r *byteReader) b32(what string) []byte { return r.take(r.u32(what+"'s length"), what) }

// DecodeCryptoRequest decodes and checks an mcp_resume_crypto request
// against the README's layout and ranges. Errors: CodeInvalidRequest
// naming what is wrong (empty, unknown op, a field past the end, bytes
// after the last field, a count, length or limit out of range). Names
// are not checked here: the host's name rule does that.
func DecodeCryptoRequest(req []byte) (CryptoRequest, *Error) {
	var q CryptoRequest
	bad := func(msg string) (CryptoRequest, *Error) {
		return CryptoRequest{}, &Error{Code: CodeInvalidRequest, Message: "mcp_resume_crypto: " + msg}
	}
	if len(req) == 0 {
		return bad("empty request: the first byte is the operation")
	}
	r := &byteReader{b: req[1:]}
	q.Op = req[0]
	fixed := func(dst []byte, what string) { copy(dst, r.take(len(dst), what)) }
	rest := func() []byte { v := r.b; r.b = nil; return v }
	switch q.Op {
	case CryptoOpHKDF, CryptoOpHMAC, CryptoOpSHA256:
		n := r.u8("count")
		if r.bad == "" && (n < 1 || n > CryptoMaxBatch) {
			return bad("count must be 1.." + strconv.Itoa(CryptoMaxBatch) + ", not " + strconv.Itoa(n))
		}
		for i := 0; i < n && r.bad == ""; i++ {
			if q.Op == CryptoOpSHA256 {
				q.Messages = append(q.Messages, r.b32("message"))
				continue
			}
			if q.Op == CryptoOpHKDF {
				it := HKDFItem{IKM: r.b16("ikm"), Salt: r.b16("salt"), Info: r.b16("info"), Length: r.u16("length")}
				if r.bad == "" && (it.Length < 1 || it.Length > CryptoMaxHKDFLen) {
					return bad("hkdf length must be 1.." + strconv.Itoa(CryptoMaxHKDFLen) + ", not " + strconv.Itoa(it.Length))
				}
				q.HKDF = append(q.HKDF, it)
			} else {
				q.HMAC = append(q.HMAC, HMACItem{Key: r.b16("key"), Message: r.b32("message")})
			}
		}
	case CryptoOpSeal, CryptoOpOpen:
		fixed(q.Key[:], "key")
		fixed(q.Nonce[:], "nonce")
		q.AAD = r.b32("aad")
		q.Data = rest()
		if r.bad == "" && q.Op == CryptoOpOpen && len(q.Data) < CryptoTagLen {
			return bad("open: the sealed bytes are shorter than the 16-byte tag")
		}
	case CryptoOpReadOpen:
		fixed(q.Key[:], "key")
		q.Name = string(r.b16("name"))
		q.Limit = r.u32("limit")
		q.HeaderLen = r.u16("header_len")
		q.NonceAt = r.u16("nonce_at")
		q.AAD = r.b32("aad_prefix")
		switch {
		case r.bad != "":
		case q.Limit < 1 || q.Limit > MaxReadLimit:
			return bad("read_open limit must be 1.." + strconv.Itoa(MaxReadLimit) + ", not " + strconv.Itoa(q.Limit))
		case q.HeaderLen < 1 || q.HeaderLen > CryptoMaxHeaderLen:
			return bad("read_open header_len must be 1.." + strconv.Itoa(CryptoMaxHeaderLen) + ", not " + strconv.Itoa(q.HeaderLen))
		case q.NonceAt+CryptoNonceLen > q.HeaderLen:
			return bad("read_open nonce_at + 12 must not pass header_len")
		}
	case CryptoOpSealWrite:
		fixed(q.Key[:], "key")
		fixed(q.Nonce[:], "nonce")
		q.Name = string(r.b16("name"))
		q.Temp = string(r.b16("temp"))
		q.Header = r.b32("header")
		q.AAD = r.b32("aad_prefix")
		q.Data = rest()
	default:
		return bad("unknown operation " + strconv.Itoa(int(q.Op)) + " (1 hkdf, 2 hmac, 3 seal, 4 open, 5 read_open, 6 seal_write, 7 sha256)")
	}
	if r.bad != "" {
		return bad(r.bad)
	}
	if len(r.b) > 0 {
		return bad(strconv.Itoa(len(r.b)) + " bytes after the last field")
	}
	return q, nil
}
