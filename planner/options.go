package planner

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures Start.
type Option func(*options) error

type options struct {
	rtt             time.Duration
	electionRTT     uint64
	heartbeatRTT    uint64
	snapshotEntries uint64
	compaction      uint64
	joinTimeout     time.Duration
	logger          *slog.Logger
}

// Defaults, in one block. The RTT suits replicas on different sites (an
// election after about 1 s of silence); loopback tests use a few ms.
func defaultOptions() options {
	return options{
		rtt:             100 * time.Millisecond,
		electionRTT:     10,
		heartbeatRTT:    1,
		snapshotEntries: 1000,
		compaction:      100,
		joinTimeout:     10 * time.Second,
		logger:          slog.Default(),
	}
}

// WithRTT sets the round trip time between replicas that Raft's ticks are
// counted in (dragonboat's RTTMillisecond): heartbeats go every
// heartbeat×rtt, an election starts after election×rtt (randomised up to
// twice that) without a leader. rtt is at least 1 ms, in whole ms.
func WithRTT(rtt time.Duration) Option {
	return func(o *options) error {
		if rtt < time.Millisecond {
			return fmt.Errorf("%w: rtt %v (want at least 1ms)", ErrBadConfig, rtt)
		}
		o.rtt = rtt
		return nil
	}
}

// WithTicks sets the election timeout and the heartbeat interval in RTTs
// (see WithRTT); election must be at least 5 × heartbeat (heartbeat >= 1).
func WithTicks(election, heartbeat uint64) Option {
	return func(o *options) error {
		if heartbeat < 1 || election < 5*heartbeat {
			return fmt.Errorf("%w: election %d and heartbeat %d RTTs (want heartbeat >= 1 and election >= 5 x heartbeat)", ErrBadConfig, election, heartbeat)
		}
		o.electionRTT, o.heartbeatRTT = election, heartbeat
		return nil
	}
}

// WithSnapshotEvery makes each replica snapshot its state every entries
// applied log entries and keep overhead entries behind the snapshot for
// slow followers; a follower further behind gets the snapshot instead.
// entries >= 2, overhead < entries.
func WithSnapshotEvery(entries, overhead uint64) Option {
	return func(o *options) error {
		if entries < 2 || overhead >= entries {
			return fmt.Errorf("%w: snapshot every %d entries keeping %d (want entries >= 2 and overhead < entries)", ErrBadConfig, entries, overhead)
		}
		o.snapshotEntries, o.compaction = entries, overhead
		return nil
	}
}

// WithJoinTimeout bounds how long a member spends adding a restarted
// replica back to the group (see Start), default 10 s.
func WithJoinTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: join timeout %v (want > 0)", ErrBadConfig, d)
		}
		o.joinTimeout = d
		return nil
	}
}

// WithLogger sets the logger of the replica (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrBadConfig)
		}
		o.logger = l
		return nil
	}
}

// attemptTimeout bounds one proposal or read attempt: long enough for an
// election and a commit, short enough to retry through a leader change.
func (o options) attemptTimeout() time.Duration {
	return max(2*time.Second, 4*time.Duration(o.electionRTT)*o.rtt)
}
