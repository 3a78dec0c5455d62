// Package planner is the agreement layer for live replanning (issue 15):
// a planner group of 1, 3 or 5 Raft replicas (github.com/lni/dragonboat/v4)
// that commits plan epochs, so that every server executes the same plan and
// exactly one plan exists per epoch, even under partitions.
//
// The replicated state machine (fsm, State) holds the current epoch: its
// number, the assignment server id -> target span, the moves in order
// (Move.Step) and each moving server's progress; an epoch is active until
// every move is done or it is aborted. Commands are versioned JSON
// (CommandVersion) checked when applied: an epoch that is not current+1, a
// new epoch while one is active, progress for an unknown or stale epoch or
// from a server without a move are refused with ErrWrongEpoch,
// ErrEpochActive, ErrUnknownEpoch, ErrStaleEpoch, ErrUnknownServer, which
// the proposer receives wrapped. Every command is idempotent (a plan
// carries a ProposalID), so proposals are retried through leader changes.
//
// Transport: dragonboat's messages and snapshot chunks travel over the
// node's libp2p host (MessageProtocol, SnapshotProtocol; varint-framed
// raftpb protobufs), plugged in as a dragonboat TransportFactory. Raft
// addresses are libp2p peer ids, so replicas behind NAT take part through
// relayed or hole-punched connections like any other stream, and a message
// batch must name the stream's authenticated peer as its source.
//
// Storage: the Raft log (dragonboat's tan LogDB) and the snapshots live in
// an in-memory file system (vfs.MemFS); nothing is written to disk. A
// restarted replica comes back empty and asks a member, over JoinProtocol,
// to replace its old Raft id with a new one (never vote again under an id
// whose votes it forgot), then catches up from the leader's log or
// snapshot. The group thus survives the loss of any minority at a time;
// if a majority restarts at once, the committed plans are lost and the
// group starts again from epoch 0 (the planner then plans from the live
// fleet, which the registry still describes).
//
// Replica is the API for the rest of the system: Start, Propose, Report,
// Abort, Current (linearizable read), Watch (applied changes), Leader and
// Close. Running the planner on the leader and executing moves on servers
// are up to the callers.
//
// This package must never import server, client, node, ingress, sim,
// blocks, routing or cmd; placement must never import it (placement stays
// pure; this package may call it).
package planner
