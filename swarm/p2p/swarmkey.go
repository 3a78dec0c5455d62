package p2p

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/libp2p/go-libp2p/core/pnet"
)

// maxSwarmKeyBytes bounds how much of a swarm key file is read; the base16
// form of a 32-byte key with its header is about 90 bytes.
const maxSwarmKeyBytes = 4 << 10

// LoadSwarmKey reads a pre-shared swarm key (a libp2p private network key)
// in the /key/swarm/psk/1.0.0/ format used by go-libp2p and IPFS
// (https://github.com/libp2p/specs/blob/master/pnet/Private-Networks-PSK-V1.md):
//
//	/key/swarm/psk/1.0.0/
//	/base16/
//	<64 hex digits>
//
// (/base64/ and /bin/ encodings are accepted too). Only nodes holding the
// same 32-byte key can connect to each other. A missing or malformed file is
// an error wrapping ErrBadSwarmKey.
func LoadSwarmKey(path string) (pnet.PSK, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSwarmKey, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxSwarmKeyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrBadSwarmKey, path, err)
	}
	if len(raw) > maxSwarmKeyBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrBadSwarmKey, path, maxSwarmKeyBytes)
	}
	psk, err := pnet.DecodeV1PSK(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w (want \"/key/swarm/psk/1.0.0/\\n/base16/\\n\" and 64 hex digits)",
			ErrBadSwarmKey, path, err)
	}
	if len(psk) != 32 {
		return nil, fmt.Errorf("%w: %s holds a %d-byte key, want 32 bytes", ErrBadSwarmKey, path, len(psk))
	}
	return psk, nil
}

// WriteNewSwarmKey creates a swarm key file at path (mode 0600, base16
// encoding) holding 32 random bytes; it fails if path exists. Distribute the
// file to every member of a private swarm.
func WriteNewSwarmKey(path string) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("p2p: swarm key: %w", err)
	}
	text := "/key/swarm/psk/1.0.0/\n/base16/\n" + hex.EncodeToString(key) + "\n"
	if err := writeFileExclusive(path, []byte(text)); err != nil {
		return fmt.Errorf("p2p: write swarm key %s: %w", path, err)
	}
	return nil
}
