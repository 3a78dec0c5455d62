package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
	"github.com/swarmllm/swarm/registry/crdt"
	"github.com/swarmllm/swarm/swarm"
)

// Limits on what a peer may send, so that bad input costs bounded memory.
const (
	// MaxEntryBytes bounds one signed entry.
	MaxEntryBytes = 64 << 10
	// MaxMessageBytes bounds one anti-entropy message (the full state).
	MaxMessageBytes = 16 << 20
	// maxSessions bounds ServerInfo.Sessions in an entry.
	maxSessions = 4096
	// maxSessionIDLen bounds the session id.
	maxSessionIDLen = 64
)

// entryDomain and entryCodec identify registry entries in libp2p signed
// envelopes (https://github.com/libp2p/specs/blob/master/RFC/0002-signed-envelopes.md):
// the domain separates these signatures from any other use of the key.
const entryDomain = "swarm-registry-entry"

var entryCodec = []byte("/swarm/registry/entry/1")

// entryBody is the signed payload of an entry (JSON).
type entryBody struct {
	NodeID      string               `json:"node_id"`
	Incarnation uint64               `json:"incarnation"`
	Session     string               `json:"session"`
	State       swarm.LifecycleState `json:"state"`
	Version     uint64               `json:"version"`
	HeartbeatMs int64                `json:"heartbeat_ms"`
	Info        swarm.ServerInfo     `json:"info"`
}

var _ record.Record = (*entryBody)(nil)

func (b *entryBody) Domain() string { return entryDomain }
func (b *entryBody) Codec() []byte  { return entryCodec }

func (b *entryBody) MarshalRecord() ([]byte, error) { return json.Marshal(b) }

func (b *entryBody) UnmarshalRecord(data []byte) error { return json.Unmarshal(data, b) }

// sealEntry signs body with key into an envelope and returns the CRDT entry
// carrying it.
func sealEntry(key crypto.PrivKey, body entryBody) (crdt.Entry, error) {
	env, err := record.Seal(&body, key)
	if err != nil {
		return crdt.Entry{}, fmt.Errorf("registry: sign entry: %w", err)
	}
	data, err := env.Marshal()
	if err != nil {
		return crdt.Entry{}, fmt.Errorf("registry: encode entry: %w", err)
	}
	if len(data) > MaxEntryBytes {
		return crdt.Entry{}, fmt.Errorf("%w: %d bytes signed, more than %d (too many sessions or endpoints?)",
			ErrBadEntry, len(data), MaxEntryBytes)
	}
	return body.entry(data), nil
}

func (b entryBody) entry(signed []byte) crdt.Entry {
	return crdt.Entry{
		NodeID:      b.NodeID,
		Incarnation: b.Incarnation,
		Session:     b.Session,
		State:       b.State,
		Version:     b.Version,
		HeartbeatMs: b.HeartbeatMs,
		Info:        b.Info,
		Signed:      signed,
	}
}

// openEntry verifies a signed entry and returns it. It returns an error
// wrapping ErrForged when the signature does not verify or the signing key
// is not the key of the entry's node id, and ErrBadEntry when the entry is
// malformed.
func openEntry(data []byte) (crdt.Entry, error) {
	if len(data) > MaxEntryBytes {
		return crdt.Entry{}, fmt.Errorf("%w: %d bytes, more than %d", ErrBadEntry, len(data), MaxEntryBytes)
	}
	var body entryBody
	env, err := record.ConsumeTypedEnvelope(data, &body)
	if err != nil {
		if errors.Is(err, record.ErrInvalidSignature) {
			return crdt.Entry{}, fmt.Errorf("%w: %w", ErrForged, err)
		}
		return crdt.Entry{}, fmt.Errorf("%w: %w", ErrBadEntry, err)
	}
	if !bytes.Equal(env.PayloadType, entryCodec) {
		return crdt.Entry{}, fmt.Errorf("%w: payload type %q, want %q", ErrBadEntry, env.PayloadType, entryCodec)
	}
	signer, err := peer.IDFromPublicKey(env.PublicKey)
	if err != nil {
		return crdt.Entry{}, fmt.Errorf("%w: signing key: %w", ErrBadEntry, err)
	}
	if signer.String() != body.NodeID {
		return crdt.Entry{}, fmt.Errorf("%w: entry of node %q signed by %s", ErrForged, body.NodeID, signer)
	}
	if err := body.validate(); err != nil {
		return crdt.Entry{}, err
	}
	return body.entry(data), nil
}

// validate checks the fields a correct node always sets.
func (b entryBody) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: node %s: %s", ErrBadEntry, b.NodeID, fmt.Sprintf(format, args...))
	}
	switch {
	case b.State < swarm.StateJoin || b.State > swarm.StateLeft:
		return bad("state %v, want JOIN, SERVING, DOWN or LEFT", b.State)
	case b.Version == 0:
		return bad("version 0, want >= 1")
	case b.Incarnation == 0:
		return bad("incarnation 0, want >= 1")
	case b.Session == "" || len(b.Session) > maxSessionIDLen:
		return bad("session id of %d bytes, want 1..%d", len(b.Session), maxSessionIDLen)
	case b.Info.ID != b.NodeID:
		return bad("info.id %q differs from the node id", b.Info.ID)
	case b.Info.Span.Start < 0 || b.Info.Span.End < b.Info.Span.Start:
		return bad("span %s, want 0 <= START <= END", b.Info.Span)
	case len(b.Info.Sessions) > maxSessions:
		return bad("%d sessions, want at most %d", len(b.Info.Sessions), maxSessions)
	}
	return nil
}

// wireState is an anti-entropy message: signed entries.
type wireState struct {
	Entries [][]byte `json:"entries"`
}

func encodeState(entries []crdt.Entry) ([]byte, error) {
	w := wireState{Entries: make([][]byte, 0, len(entries))}
	for _, e := range entries {
		w.Entries = append(w.Entries, e.Signed)
	}
	data, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("registry: encode state: %w", err)
	}
	if len(data) > MaxMessageBytes {
		return nil, fmt.Errorf("registry: state of %d entries is %d bytes, more than %d", len(entries), len(data), MaxMessageBytes)
	}
	return data, nil
}

func decodeState(data []byte) ([][]byte, error) {
	if len(data) > MaxMessageBytes {
		return nil, fmt.Errorf("%w: state message of %d bytes, more than %d", ErrBadEntry, len(data), MaxMessageBytes)
	}
	var w wireState
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: state message: %w", ErrBadEntry, err)
	}
	return w.Entries, nil
}

// peekEntry decodes a signed entry WITHOUT verifying it, to decide cheaply
// whether it could change the replica (only entries that would win are
// verified, by openEntry).
func peekEntry(data []byte) (crdt.Entry, error) {
	if len(data) > MaxEntryBytes {
		return crdt.Entry{}, fmt.Errorf("%w: %d bytes, more than %d", ErrBadEntry, len(data), MaxEntryBytes)
	}
	env, err := record.UnmarshalEnvelope(data)
	if err != nil {
		return crdt.Entry{}, fmt.Errorf("%w: %w", ErrBadEntry, err)
	}
	var body entryBody
	if err := body.UnmarshalRecord(env.RawPayload); err != nil {
		return crdt.Entry{}, fmt.Errorf("%w: %w", ErrBadEntry, err)
	}
	return body.entry(data), nil
}
