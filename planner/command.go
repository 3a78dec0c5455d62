package planner

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// CommandVersion is the version of the command encoding written to the Raft
// log. A replica refuses (ErrBadCommand) a command of another version, so a
// mixed-version group never applies a command it does not understand.
const CommandVersion = 1

// Command operations.
const (
	opPropose  = "propose"
	opProgress = "progress"
	opAbort    = "abort"
)

// command is one entry of the Raft log: a JSON object
//
//	{"v":1,"op":"propose","plan":{...}}
//	{"v":1,"op":"progress","epoch":3,"server":"12D3...","progress":{"state":"done"}}
//	{"v":1,"op":"abort","epoch":3,"reason":"leader changed during the move"}
//
// Unknown fields are refused.
type command struct {
	V        int       `json:"v"`
	Op       string    `json:"op"`
	Plan     *Plan     `json:"plan,omitempty"`
	Epoch    uint64    `json:"epoch,omitempty"`
	Server   string    `json:"server,omitempty"`
	Progress *Progress `json:"progress,omitempty"`
	Reason   string    `json:"reason,omitempty"`
}

// encode returns the command's log encoding.
func (c command) encode() []byte {
	c.V = CommandVersion
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("planner: marshal command: %v", err)) // plain structs always marshal
	}
	return b
}

// decodeCommand parses and checks a log entry's command.
func decodeCommand(b []byte) (command, error) {
	var c command
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return command{}, fmt.Errorf("%w: %w", ErrBadCommand, err)
	}
	if c.V != CommandVersion {
		return command{}, fmt.Errorf("%w: command version %d (this replica reads version %d)", ErrBadCommand, c.V, CommandVersion)
	}
	switch c.Op {
	case opPropose:
		if c.Plan == nil {
			return command{}, fmt.Errorf("%w: propose without a plan", ErrBadCommand)
		}
	case opProgress:
		if c.Progress == nil || c.Server == "" {
			return command{}, fmt.Errorf("%w: progress needs a server and a progress report", ErrBadCommand)
		}
	case opAbort:
	default:
		return command{}, fmt.Errorf("%w: operation %q (want %s, %s or %s)", ErrBadCommand, c.Op, opPropose, opProgress, opAbort)
	}
	return c, nil
}

// apply applies a decoded command to s; on error s is unchanged.
func (s *State) apply(c command) error {
	switch c.Op {
	case opPropose:
		return s.applyPropose(*c.Plan)
	case opProgress:
		return s.applyProgress(c.Epoch, c.Server, *c.Progress)
	default:
		return s.applyAbort(c.Epoch, c.Reason)
	}
}
