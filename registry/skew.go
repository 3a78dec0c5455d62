package registry

import (
	"maps"
	"time"
)

// skewWarnEvery is the least time between two clock warnings about one
// node.
const skewWarnEvery = time.Minute

// maxSkewRecords bounds the clock records kept; past it, records of nodes
// the replica no longer holds are dropped.
const maxSkewRecords = 10000

// skewRecord is what a replica learned of one node's clock from the
// heartbeats it gossiped directly.
type skewRecord struct {
	// offset is the node's stamp minus this replica's clock at receipt, at
	// the latest direct heartbeat: how far the node's clock runs ahead
	// (negative: behind), plus the gossip delay.
	offset time.Duration
	warned time.Time // last warning logged, on this replica's clock
}

// noteClockLocked records the clock offset a direct heartbeat of node,
// stamped at stampMs and received at nowMs, shows, and warns (at most once
// a minute per node) when it exceeds --max-clock-skew: a node ahead has its
// entries refused, one behind is SUSPECTED when its heartbeats arrive older
// than --suspect-after. Neither is silent: the log names the node and the
// offset, and ClockOffsets reports it (swarm status).
func (r *Registry) noteClockLocked(node string, stampMs, nowMs int64, now time.Time) {
	rec := r.skewLocked[node]
	if rec == nil {
		if len(r.skewLocked) >= maxSkewRecords {
			for id := range r.skewLocked {
				if _, held := r.gmapLocked.Get(id); !held {
					delete(r.skewLocked, id)
				}
			}
		}
		rec = &skewRecord{}
		r.skewLocked[node] = rec
	}
	rec.offset = time.Duration(stampMs-nowMs) * time.Millisecond
	tolerated := r.cfg.MaxClockSkew
	if rec.offset >= -tolerated && rec.offset <= tolerated || now.Sub(rec.warned) < skewWarnEvery {
		return
	}
	rec.warned = now
	if rec.offset > 0 {
		r.log.Warn("registry: refusing a node's entries: its clock runs ahead of this node's by more than --max-clock-skew; "+
			"fix the clock (NTP) of whichever node is wrong", "node", node, "offset", rec.offset, "max_clock_skew", tolerated)
		return
	}
	msg := "registry: a node's heartbeats arrive older than --max-clock-skew: its clock runs behind this node's (or gossip is that slow)"
	if -rec.offset > r.cfg.SuspectAfter+tolerated {
		msg += "; it shows SUSPECTED here and gets no sessions; fix the clock (NTP) of whichever node is wrong"
	}
	r.log.Warn(msg, "node", node, "offset", rec.offset, "max_clock_skew", tolerated)
}

// ClockOffsets returns, per node id, how far that node's clock ran ahead
// of this replica's (negative: behind) at its latest heartbeat gossiped
// directly, gossip delay included (milliseconds on a LAN), or at an entry
// stamped ahead of this clock by more than --max-clock-skew however it
// came (anti-entropy too: a delay never makes a stamp look newer). Nodes
// beyond --max-clock-skew are logged at WARN; a node ahead by more has its
// entries refused and appears here only.
func (r *Registry) ClockOffsets() map[string]time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Duration, len(r.skewLocked))
	for id, rec := range maps.All(r.skewLocked) {
		out[id] = rec.offset
	}
	return out
}
