package registry

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

func newKey(t *testing.T) (crypto.PrivKey, string) {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	require.NoError(t, err)
	id, err := peer.IDFromPrivateKey(k)
	require.NoError(t, err)
	return k, id.String()
}

func goodBody(id string) entryBody {
	return entryBody{
		NodeID: id, Incarnation: 7, Session: "s", State: swarm.StateServing, Version: 3, HeartbeatMs: 1000,
		Info: swarm.ServerInfo{ID: id, Model: "m", Span: swarm.Span{Start: 1, End: 3}},
	}
}

func TestSealOpen_RoundTrip(t *testing.T) {
	k, id := newKey(t)
	e, err := sealEntry(k, goodBody(id))
	require.NoError(t, err)
	got, err := openEntry(e.Signed)
	require.NoError(t, err)
	require.Equal(t, e, got)
	require.Equal(t, swarm.Span{Start: 1, End: 3}, got.Info.Span)
	peeked, err := peekEntry(e.Signed)
	require.NoError(t, err)
	require.Equal(t, e, peeked)
}

func TestOpen_RejectsForgeries(t *testing.T) {
	victimKey, victim := newKey(t)
	forgerKey, _ := newKey(t)

	// An entry for the victim's id signed with the forger's key.
	forged, err := sealEntry(forgerKey, goodBody(victim))
	require.NoError(t, err)
	_, err = openEntry(forged.Signed)
	require.ErrorIs(t, err, ErrForged)

	// A genuine entry whose payload was altered after signing.
	genuine, err := sealEntry(victimKey, goodBody(victim))
	require.NoError(t, err)
	env, err := record.UnmarshalEnvelope(genuine.Signed)
	require.NoError(t, err)
	body := goodBody(victim)
	body.Info.Span = swarm.Span{Start: 0, End: 5}
	env.RawPayload, err = json.Marshal(body)
	require.NoError(t, err)
	tampered, err := env.Marshal()
	require.NoError(t, err)
	_, err = openEntry(tampered)
	require.ErrorIs(t, err, ErrForged)

	// Garbage.
	_, err = openEntry([]byte("not an envelope"))
	require.ErrorIs(t, err, ErrBadEntry)
	_, err = openEntry(make([]byte, MaxEntryBytes+1))
	require.ErrorIs(t, err, ErrBadEntry)
}

// otherRecord is a different record type signed by the same key: its
// signature must not be accepted as a registry entry.
type otherRecord struct{ entryBody }

func (*otherRecord) Domain() string { return "some-other-domain" }
func (*otherRecord) Codec() []byte  { return []byte("/other/1") }

func TestOpen_RejectsOtherRecordTypes(t *testing.T) {
	k, id := newKey(t)
	env, err := record.Seal(&otherRecord{goodBody(id)}, k)
	require.NoError(t, err)
	data, err := env.Marshal()
	require.NoError(t, err)
	_, err = openEntry(data)
	require.Error(t, err)
	require.True(t, isForgedOrBad(err), "got %v", err)
}

func isForgedOrBad(err error) bool {
	return err != nil && (errors.Is(err, ErrForged) || errors.Is(err, ErrBadEntry))
}

func TestOpen_RejectsMalformedFields(t *testing.T) {
	k, id := newKey(t)
	tests := map[string]func(*entryBody){
		"suspected":     func(b *entryBody) { b.State = swarm.StateSuspected },
		"unknown state": func(b *entryBody) { b.State = swarm.StateUnknown },
		"version 0":     func(b *entryBody) { b.Version = 0 },
		"incarnation 0": func(b *entryBody) { b.Incarnation = 0 },
		"no session":    func(b *entryBody) { b.Session = "" },
		"long session":  func(b *entryBody) { b.Session = string(make([]byte, 65)) },
		"info id":       func(b *entryBody) { b.Info.ID = "other" },
		"negative span": func(b *entryBody) { b.Info.Span = swarm.Span{Start: -1, End: 2} },
		"reversed span": func(b *entryBody) { b.Info.Span = swarm.Span{Start: 3, End: 2} },
		"many sessions": func(b *entryBody) { b.Info.Sessions = make([]swarm.SessionLoad, maxSessions+1) },
	}
	for name, mod := range tests {
		t.Run(name, func(t *testing.T) {
			b := goodBody(id)
			mod(&b)
			env, err := record.Seal(&b, k)
			require.NoError(t, err)
			data, err := env.Marshal()
			require.NoError(t, err)
			_, err = openEntry(data)
			require.ErrorIs(t, err, ErrBadEntry)
		})
	}
}

// nullTransport is a Transport that connects to nobody.
type nullTransport struct{ in chan Message }

func (n nullTransport) Broadcast(context.Context, []byte) error { return nil }
func (n nullTransport) Exchange(context.Context, string, []byte) ([]byte, error) {
	return nil, ErrNoPeers
}
func (n nullTransport) Peers() []string         { return nil }
func (n nullTransport) Inbound() <-chan Message { return n.in }
func (n nullTransport) Close() error            { return nil }

// TestIngest_RefusesFutureAndCollectableEntries checks the two clock rules:
// entries stamped beyond the tolerated skew are errors, and entries that are
// already collectable are ignored, so that a replica which still holds an
// old entry cannot resurrect it in one that has collected it.
func TestIngest_RefusesFutureAndCollectableEntries(t *testing.T) {
	myKey, _ := newKey(t)
	cfg := DefaultLANConfig()
	r, err := New(nullTransport{in: make(chan Message)}, myKey, cfg)
	require.NoError(t, err)
	defer r.Close()
	k, id := newKey(t)
	now := time.Now()

	future := goodBody(id)
	future.HeartbeatMs = now.Add(cfg.MaxClockSkew + time.Second).UnixMilli()
	e, err := sealEntry(k, future)
	require.NoError(t, err)
	_, changed, err := r.ingest(e.Signed, now, false)
	require.ErrorIs(t, err, ErrBadEntry)
	require.False(t, changed)

	for name, b := range map[string]entryBody{
		"silent past left+retention": func() entryBody {
			b := goodBody(id)
			b.HeartbeatMs = now.Add(-cfg.LeftAfter - cfg.Retention - time.Second).UnixMilli()
			return b
		}(),
		"announced LEFT past retention": func() entryBody {
			b := goodBody(id)
			b.State = swarm.StateLeft
			b.HeartbeatMs = now.Add(-cfg.Retention - time.Second).UnixMilli()
			return b
		}(),
	} {
		e, err := sealEntry(k, b)
		require.NoError(t, err, name)
		_, changed, err := r.ingest(e.Signed, now, false)
		require.NoError(t, err, name)
		require.False(t, changed, name)
		_, ok := r.Get(id)
		require.False(t, ok, name)
	}

	fresh := goodBody(id)
	fresh.HeartbeatMs = now.UnixMilli()
	e, err = sealEntry(k, fresh)
	require.NoError(t, err)
	_, changed, err = r.ingest(e.Signed, now, false)
	require.NoError(t, err)
	require.True(t, changed)
	_, changed, err = r.ingest(e.Signed, now, false)
	require.NoError(t, err)
	require.False(t, changed, "idempotent")
	got, ok := r.Get(id)
	require.True(t, ok)
	require.Equal(t, swarm.StateServing, got.State)
}
