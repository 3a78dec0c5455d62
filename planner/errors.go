package planner

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, wrapped with details by the functions that return them.
// The state machine's rejections (ErrBadCommand ... ErrEpochClosed) travel
// through the Raft log as codes (see rejectionCodes) and come back to the
// proposer wrapped around the same sentinel.
var (
	// ErrBadConfig is returned by Config.Validate and Start.
	ErrBadConfig = errors.New("planner: bad config")
	// ErrBadCommand is returned for a command that does not decode or is
	// malformed (bad span, unknown move state, unknown version ...).
	ErrBadCommand = errors.New("planner: bad command")
	// ErrWrongEpoch is returned when a proposed epoch is not current+1.
	ErrWrongEpoch = errors.New("planner: wrong epoch")
	// ErrEpochActive is returned when an epoch is proposed while the
	// current one is still active (abort it first).
	ErrEpochActive = errors.New("planner: epoch still active")
	// ErrUnknownEpoch is returned for a report or abort naming an epoch
	// that has not been committed.
	ErrUnknownEpoch = errors.New("planner: unknown epoch")
	// ErrStaleEpoch is returned for a report or abort naming an epoch older
	// than the current one.
	ErrStaleEpoch = errors.New("planner: stale epoch")
	// ErrUnknownServer is returned for a report from a server with no move
	// in the epoch.
	ErrUnknownServer = errors.New("planner: server has no move in the epoch")
	// ErrEpochClosed is returned for a report or abort on an epoch (or a
	// server's move) that is already finished.
	ErrEpochClosed = errors.New("planner: epoch closed")
	// ErrClosed is returned by calls on a closed Replica.
	ErrClosed = errors.New("planner: replica closed")
	// ErrJoin is returned when a restarted replica cannot join its group.
	ErrJoin = errors.New("planner: cannot join the group")
)

// rejectionCodes names the state machine's rejections on the wire (in the
// Raft log's results); the codes never change meaning.
var rejectionCodes = map[string]error{
	"bad_command":    ErrBadCommand,
	"wrong_epoch":    ErrWrongEpoch,
	"epoch_active":   ErrEpochActive,
	"unknown_epoch":  ErrUnknownEpoch,
	"stale_epoch":    ErrStaleEpoch,
	"unknown_server": ErrUnknownServer,
	"epoch_closed":   ErrEpochClosed,
}

// rejectionCode returns the code of err's sentinel ("bad_command" when it
// wraps none of them).
func rejectionCode(err error) string {
	for code, sentinel := range rejectionCodes {
		if errors.Is(err, sentinel) && sentinel != ErrBadCommand {
			return code
		}
	}
	return "bad_command"
}

// rejectionError rebuilds a rejection from its code and message.
func rejectionError(code, msg string) error {
	sentinel, ok := rejectionCodes[code]
	if !ok {
		return fmt.Errorf("%w: unknown rejection code %q: %s", ErrBadCommand, code, msg)
	}
	// msg is the original error's text, which starts with the sentinel's.
	return fmt.Errorf("%w%s", sentinel, strings.TrimPrefix(msg, sentinel.Error()))
}
