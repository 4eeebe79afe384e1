package main

// The native baseline: the file work of one handle-store operation done
// directly in Go, on a record of the same shape and value size (a 65-byte
// header, then the AES-256-GCM ciphertext of the value), with no index, no
// lock and no plugin. It is what a store written natively would do at the
// least, so the store's ratio to it is the price of the plugin, the shard
// index and the shard lock.

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// headerLen is the record header of the plugin's format: magic, version,
// generation, created, idle TTL, max age, principal tag, nonce.
const headerLen = 4 + 1 + 8 + 8 + 8 + 8 + 16 + 12

// native is a directory of sealed records, one file per key.
type native struct {
	dir string
	aad []byte
}

// nativeKey is one native record's name and sealing key.
type nativeKey struct {
	name string
	key  [32]byte
}

func newNative(dir string) (*native, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &native{dir: dir, aad: []byte("mcp-resume handle v1\x00bench\x00")}, nil
}

func newNativeKey() nativeKey {
	var k nativeKey
	rand.Read(k.key[:])
	var h [16]byte
	rand.Read(h[:])
	k.name = "h-" + hex.EncodeToString(h[:])
	return k
}

// gcm makes the AES-256-GCM of a key: per operation, as the store derives
// a key per handle.
func gcm(key *[32]byte) cipher.AEAD {
	b, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err)
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return g
}

// seal builds a record: header (generation gen, a random nonce) and the
// sealed value, the header bound as associated data.
func (n *native) seal(k *nativeKey, gen uint64, value []byte) []byte {
	rec := make([]byte, headerLen, headerLen+len(value)+16)
	copy(rec, "MRH1\x01")
	binary.BigEndian.PutUint64(rec[5:], gen)
	rand.Read(rec[headerLen-12 : headerLen])
	aad := append(append([]byte{}, n.aad...), rec[:headerLen]...)
	return gcm(&k.key).Seal(rec, rec[headerLen-12:headerLen], value, aad)
}

// write replaces the record: a temp file created exclusively (0600, not
// through a symlink), written, closed, renamed over the name; no fsync, as
// the store's mcp_resume_write.
func (n *native) write(name string, data []byte) error {
	var r [8]byte
	rand.Read(r[:])
	tmp := filepath.Join(n.dir, name+"."+hex.EncodeToString(r[:])+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(n.dir, name))
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// read reads at most limit bytes of the record, not through a symlink.
func (n *native) read(name string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(filepath.Join(n.dir, name), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// create seals value at generation 1 and writes it.
func (n *native) create(k *nativeKey, value []byte) error {
	return n.write(k.name, n.seal(k, 1, value))
}

// get reads the whole record and opens it.
func (n *native) get(k *nativeKey) ([]byte, error) {
	rec, err := n.read(k.name, headerLen+4<<20+16+1)
	if err != nil {
		return nil, err
	}
	if len(rec) < headerLen+16 {
		return nil, errors.New("native: short record")
	}
	aad := append(append([]byte{}, n.aad...), rec[:headerLen]...)
	return gcm(&k.key).Open(nil, rec[headerLen-12:headerLen], rec[headerLen:], aad)
}

// put reads the header (the current generation, as the store's put does),
// seals value at the next generation and writes it.
func (n *native) put(k *nativeKey, value []byte) error {
	h, err := n.read(k.name, headerLen)
	if err != nil {
		return err
	}
	if len(h) < headerLen {
		return errors.New("native: short header")
	}
	return n.write(k.name, n.seal(k, binary.BigEndian.Uint64(h[5:])+1, value))
}

// del reads the header (the generation a compare-and-delete checks) and
// unlinks the record.
func (n *native) del(k *nativeKey) error {
	h, err := n.read(k.name, headerLen)
	if err != nil {
		return err
	}
	if len(h) < headerLen {
		return fmt.Errorf("native: short header")
	}
	return syscall.Unlink(filepath.Join(n.dir, k.name))
}
