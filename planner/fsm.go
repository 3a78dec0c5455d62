package planner

import (
	"encoding/json"
	"fmt"
	"io"

	sm "github.com/lni/dragonboat/v4/statemachine"
)

// Results of an applied command (sm.Result.Value).
const (
	// resultApplied: the command changed the state (or was a retry of one
	// that did).
	resultApplied uint64 = 1
	// resultRejected: the state machine refused the command;
	// sm.Result.Data holds a rejection.
	resultRejected uint64 = 2
)

// rejection is sm.Result.Data of a refused command.
type rejection struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

// SnapshotVersion is the version of the snapshot encoding.
const SnapshotVersion = 1

// snapshot is the snapshot encoding: {"v":1,"state":{...}}.
type snapshot struct {
	V     int   `json:"v"`
	State State `json:"state"`
}

// fsm is the replicated state machine (dragonboat's in-memory
// IStateMachine): the current plan epoch. dragonboat serialises Update and
// RecoverFromSnapshot against Lookup and SaveSnapshot with its own lock.
type fsm struct {
	state State
	// changed is called with a copy of the state after every change, from
	// dragonboat's apply goroutine; it must not block.
	changed func(State)
}

var _ sm.IStateMachine = (*fsm)(nil)

// Update applies one committed command. A command the state machine
// refuses is a result (resultRejected), never an error: an error would
// halt the replica.
func (f *fsm) Update(e sm.Entry) (sm.Result, error) {
	c, err := decodeCommand(e.Cmd)
	if err == nil {
		err = f.state.apply(c)
	}
	if err != nil {
		data, merr := json.Marshal(rejection{Code: rejectionCode(err), Error: err.Error()})
		if merr != nil {
			return sm.Result{}, fmt.Errorf("planner: encode rejection: %w", merr)
		}
		return sm.Result{Value: resultRejected, Data: data}, nil
	}
	f.changed(f.state.Clone())
	return sm.Result{Value: resultApplied}, nil
}

// Lookup returns a copy of the state (the query is ignored).
func (f *fsm) Lookup(any) (any, error) { return f.state.Clone(), nil }

// SaveSnapshot writes the state as JSON.
func (f *fsm) SaveSnapshot(w io.Writer, _ sm.ISnapshotFileCollection, _ <-chan struct{}) error {
	if err := json.NewEncoder(w).Encode(snapshot{V: SnapshotVersion, State: f.state}); err != nil {
		return fmt.Errorf("planner: save snapshot: %w", err)
	}
	return nil
}

// RecoverFromSnapshot replaces the state with a saved one.
func (f *fsm) RecoverFromSnapshot(r io.Reader, _ []sm.SnapshotFile, _ <-chan struct{}) error {
	s, err := readSnapshot(r)
	if err != nil {
		return err
	}
	f.state = s
	f.changed(f.state.Clone())
	return nil
}

// Close does nothing: the state lives in memory only.
func (f *fsm) Close() error { return nil }

// readSnapshot decodes a snapshot written by SaveSnapshot.
func readSnapshot(r io.Reader) (State, error) {
	var s snapshot
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return State{}, fmt.Errorf("planner: read snapshot: %w", err)
	}
	if s.V != SnapshotVersion {
		return State{}, fmt.Errorf("planner: snapshot version %d (this replica reads version %d)", s.V, SnapshotVersion)
	}
	return s.State, nil
}

// resultError turns an applied command's result into the proposer's error.
func resultError(r sm.Result) error {
	switch r.Value {
	case resultApplied:
		return nil
	case resultRejected:
		var rej rejection
		if err := json.Unmarshal(r.Data, &rej); err != nil {
			return fmt.Errorf("%w: undecodable rejection %q: %w", ErrBadCommand, r.Data, err)
		}
		return rejectionError(rej.Code, rej.Error)
	default:
		return fmt.Errorf("%w: unknown result %d", ErrBadCommand, r.Value)
	}
}
