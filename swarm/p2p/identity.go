package p2p

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// maxIdentityBytes bounds how much of an identity file is read: a marshalled
// Ed25519 key is 68 bytes, an RSA-4096 key about 2.4 KiB.
const maxIdentityBytes = 16 << 10

// LoadOrCreateIdentity returns the private key stored at path, creating a new
// Ed25519 key there (mode 0600) when the file does not exist; created reports
// which happened. The file holds the key as libp2p's protobuf encoding
// (crypto.MarshalPrivateKey, https://github.com/libp2p/specs/blob/master/peer-ids/peer-ids.md#keys).
//
// The file is written atomically: the key goes to a temporary file in the
// same directory, is synced, then hard-linked to path, which fails if another
// process created path meanwhile; in that case the other process's key is
// read and returned, so two processes racing on the same path end up with
// the same identity.
//
// A file that exists but does not decode as a private key is an error
// wrapping ErrBadIdentity; it is never replaced.
func LoadOrCreateIdentity(path string) (key crypto.PrivKey, created bool, err error) {
	if path == "" {
		return nil, false, fmt.Errorf("%w: empty path", ErrBadIdentity)
	}
	key, err = readIdentity(path)
	if err == nil {
		return key, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	key, _, err = crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, false, fmt.Errorf("p2p: generate identity key: %w", err)
	}
	raw, err := crypto.MarshalPrivateKey(key)
	if err != nil {
		return nil, false, fmt.Errorf("p2p: marshal identity key: %w", err)
	}
	err = writeFileExclusive(path, raw)
	if errors.Is(err, fs.ErrExist) {
		// Another process won the race: use its key.
		key, err = readIdentity(path)
		return key, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("p2p: write identity %s: %w", path, err)
	}
	return key, true, nil
}

// PeerIDFromKey returns the peer id of a private key.
func PeerIDFromKey(key crypto.PrivKey) (peer.ID, error) {
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return "", fmt.Errorf("p2p: peer id from key: %w", err)
	}
	return id, nil
}

// readIdentity reads and decodes a key file. It returns an error wrapping
// fs.ErrNotExist when the file is missing and ErrBadIdentity when it is not
// a key.
func readIdentity(path string) (crypto.PrivKey, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("p2p: read identity: %w", err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxIdentityBytes+1))
	n := len(buf)
	if err != nil {
		return nil, fmt.Errorf("p2p: read identity %s: %w", path, err)
	}
	if n > maxIdentityBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes; want a libp2p private key as written by `swarm identity`",
			ErrBadIdentity, path, maxIdentityBytes)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %s is empty; delete it to create a new identity, or restore the key", ErrBadIdentity, path)
	}
	key, err := crypto.UnmarshalPrivateKey(buf[:n])
	if err != nil {
		return nil, fmt.Errorf("%w: %s does not hold a libp2p private key (%w); delete it to create a new identity, or restore the key",
			ErrBadIdentity, path, err)
	}
	return key, nil
}

// writeFileExclusive writes data to path with mode 0600 unless path exists,
// in which case it returns an error wrapping fs.ErrExist. The content is
// complete before the name appears (temporary file, fsync, link).
func writeFileExclusive(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		// The temporary name is only a staging name; path (if linked) keeps the inode.
		err = errors.Join(err, os.Remove(tmp.Name()))
	}()
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) && errors.Is(le.Err, fs.ErrExist) {
			return fs.ErrExist
		}
		return err
	}
	return syncDir(dir)
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some file systems do not support fsync on directories; the link is
	// still in place, so that is not an error worth failing for.
	_ = d.Sync()
	return nil
}
