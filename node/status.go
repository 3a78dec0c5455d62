package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/swarmllm/swarm/fleet"
	"github.com/swarmllm/swarm/planner"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// StatusServer is one element of `swarm status --json`.
type StatusServer struct {
	ID             string  `json:"id"`
	Provider       string  `json:"provider"`
	Model          string  `json:"model"`
	Start          int     `json:"start"`
	End            int     `json:"end"`
	State          string  `json:"state"`
	Tau            float64 `json:"tau"`
	Sessions       int     `json:"sessions"`
	CacheFreeBytes int64   `json:"cache_free_bytes"`
	HeartbeatAgeS  float64 `json:"heartbeat_age_s"` // now - its last stamp: < 0 when its clock runs ahead
	// Device, Kernels and TauBatch (seconds per block by batch size) as
	// the server advertises them.
	Device   string           `json:"device,omitempty"`
	Kernels  string           `json:"kernels,omitempty"`
	TauBatch []swarm.BatchTau `json:"tau_batch,omitempty"`
	// PublicName, Reachability and Endpoints (websocket URL, libp2p
	// multiaddrs) as the server advertises them (`swarm serve
	// --public-name`, its AutoNAT verdict, --announce / --announce-p2p).
	PublicName   string   `json:"public_name,omitempty"`
	Reachability string   `json:"reachability,omitempty"`
	Endpoints    []string `json:"endpoints,omitempty"`
}

// WriteStatusJSON writes entries as `swarm status --json` prints them:
// {"servers": [StatusServer...]}, indented.
func WriteStatusJSON(w io.Writer, entries []registry.Entry) error {
	out := struct {
		Servers []StatusServer `json:"servers"`
	}{Servers: []StatusServer{}}
	for _, e := range entries {
		out.Servers = append(out.Servers, StatusServer{
			ID: e.NodeID, Provider: e.Info.Provider, Model: e.Info.Model, Start: e.Info.Span.Start, End: e.Info.Span.End,
			State: e.State.String(), Tau: e.Info.Tau, Sessions: len(e.Info.Sessions), CacheFreeBytes: e.Info.CacheBytesFree,
			HeartbeatAgeS: time.Since(e.Heartbeat).Seconds(), Device: e.Info.Device, Kernels: e.Info.Kernels, TauBatch: e.Info.TauBatch,
			PublicName: e.Info.PublicName, Reachability: e.Info.Reachability, Endpoints: e.Info.Endpoints,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteStatusTable writes entries as `swarm status` prints them: one row
// per node (sizes in binary units, "1.5 GiB"; NAME is the public name,
// REACH the reachability verdict, "-" when not advertised), then each
// model's block coverage (BlockCoverage).
func WriteStatusTable(w io.Writer, entries []registry.Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPROVIDER\tNAME\tMODEL\tSPAN\tSTATE\tTAU\tSESSIONS\tMEMORY\tCACHE FREE\tREACH\tHEARTBEAT AGE")
	for _, e := range entries {
		state := e.State.String()
		if e.Info.MovingTo != (swarm.Span{}) {
			state += " (moving to " + e.Info.MovingTo.String() + ")"
		}
		if e.Info.Draining != (swarm.Span{}) {
			state += " (draining " + e.Info.Draining.String() + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%v\n", e.NodeID, dash(e.Info.Provider), dash(e.Info.PublicName),
			dash(e.Info.Model), e.Info.Span, state, time.Duration(e.Info.Tau*float64(time.Second)), len(e.Info.Sessions),
			humanBytes(e.Info.MemoryBytes), humanBytes(e.Info.CacheBytesFree), dash(e.Info.Reachability), time.Since(e.Heartbeat).Round(100*time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(entries) == 0 {
		_, err := fmt.Fprintln(w, "(no servers in the registry)")
		return err
	}
	for _, c := range BlockCoverage(entries) {
		if _, err := fmt.Fprintln(w, c.String()); err != nil {
			return err
		}
	}
	return nil
}

// WritePlan writes the committed plan p as `swarm status --planners`
// prints it: its epoch and status, then one line per move with its step
// and the server's last report.
func WritePlan(w io.Writer, p planner.Plan) error {
	if p.Epoch == 0 {
		_, err := fmt.Fprintln(w, "plan: none committed yet")
		return err
	}
	head := fmt.Sprintf("plan: epoch %d %s, %d moves", p.Epoch, p.Status, len(p.Moves))
	if p.AbortReason != "" {
		head += " (aborted: " + p.AbortReason + ")"
	}
	if _, err := fmt.Fprintln(w, head); err != nil {
		return err
	}
	for _, m := range p.Moves {
		state := "waiting"
		if pr, ok := p.Progress[m.Server]; ok {
			state = fmt.Sprintf("move %d %s", pr.Move, pr.State)
		}
		if _, err := fmt.Fprintf(w, "  step %d  %s  %s -> %s  (%s)\n", m.Step, m.Server, m.From, m.To, state); err != nil {
			return err
		}
	}
	return nil
}

// humanBytes formats n bytes in binary units ("1.5 GiB", "512 B").
func humanBytes(n int64) string {
	if n < 0 {
		return "-" + humanize.IBytes(uint64(-n))
	}
	return humanize.IBytes(uint64(n))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// FleetClient is the one client name of a live fleet file: the servers'
// ClientRTT, t*_j = max_c t_cj (paper 003 eq. 14), is the per-token RTT to
// it.
const FleetClient = "clients"

// LiveFleet describes the SERVING block servers of model (any model when
// empty, if the registry holds one) as a fleet file (package fleet, what
// `swarm plan` takes), with each server's current span, so that the live
// placement can be compared with a batch plan of the same fleet: name =
// node id, memory_bytes = M_j, tau = tau_j, rtt = ClientRTT to one client
// (FleetClient), span as advertised; the model's L, s_m (the largest
// M_j - cache capacity over m_j advertised), s_c = cache bytes per token x
// l^I_max + l_max, per block when blocks slide. R and l^I_max + l_max are
// sessions and maxLength when > 0, else what the servers were placed with
// (ServerInfo.PlacementSessions, PlacementMaxLength), which must agree.
// Errors name what is missing or disagrees.
func LiveFleet(entries []registry.Entry, model string, sessions, maxLength int) (fleet.File, error) {
	var servers []registry.Entry
	models := map[string]bool{}
	for _, e := range entries {
		if e.State != swarm.StateServing || e.Info.FullRange {
			continue
		}
		models[e.Info.Model] = true
		if model == "" || e.Info.Model == model {
			servers = append(servers, e)
		}
	}
	if model == "" && len(models) > 1 {
		names := make([]string, 0, len(models))
		for m := range models {
			names = append(names, m)
		}
		slices.Sort(names)
		return fleet.File{}, fmt.Errorf("the registry serves %d models (%v): name one with --model", len(names), names)
	}
	if len(servers) == 0 {
		return fleet.File{}, fmt.Errorf("no SERVING block server of model %q in the registry", model)
	}
	slices.SortFunc(servers, func(a, b registry.Entry) int { return strings.Compare(a.NodeID, b.NodeID) })
	first := servers[0].Info
	var ff fleet.File
	ff.Model.Blocks = first.ModelBlocks
	for _, e := range servers {
		in := e.Info
		if in.ModelBlocks != ff.Model.Blocks {
			return fleet.File{}, fmt.Errorf("servers disagree on the model's blocks: %d (%s) and %d (%s)", ff.Model.Blocks, servers[0].NodeID, in.ModelBlocks, e.NodeID)
		}
		if sessions <= 0 && in.PlacementSessions > 0 {
			sessions = in.PlacementSessions
		}
		if maxLength <= 0 && in.PlacementMaxLength > 0 {
			maxLength = in.PlacementMaxLength
		}
	}
	switch {
	case ff.Model.Blocks <= 0:
		return fleet.File{}, errors.New("the servers do not advertise the model's number of blocks")
	case sessions <= 0 || maxLength <= 0:
		return fleet.File{}, fmt.Errorf("the servers were not placed with --blocks auto (no target sessions / max length advertised): give --target-sessions and --max-length")
	}
	var blockBytes, cacheBytes float64
	perBlock := make([]float64, ff.Model.Blocks)
	for _, e := range servers {
		in := e.Info
		m := in.Span.Len()
		if in.CacheBytesCapacity > 0 && in.MemoryBytes > in.CacheBytesCapacity && m > 0 {
			blockBytes = max(blockBytes, float64((in.MemoryBytes-in.CacheBytesCapacity)/int64(m)))
		}
		mi := swarm.ModelInfo{NBlocks: ff.Model.Blocks, CacheBytesPerToken: in.CacheBytesPerToken, SlidingWindow: in.SlidingWindow, SlidingPattern: in.SlidingPattern}
		cacheBytes = max(cacheBytes, float64(mi.CacheBytes(maxLength)))
		for b := range perBlock {
			perBlock[b] = max(perBlock[b], float64(mi.BlockCacheBytes(b, maxLength)))
		}
	}
	if blockBytes <= 0 || cacheBytes <= 0 {
		return fleet.File{}, errors.New("the servers do not advertise their memory, cache capacity and cache bytes per token")
	}
	ff.Model.BlockBytes, ff.Model.CacheBytes = &blockBytes, &cacheBytes
	if first.SlidingWindow > 0 {
		ff.Model.BlockCacheBytes = perBlock
	}
	ff.TargetSessions = &sessions
	ff.Clients = []string{FleetClient}
	for _, e := range servers {
		mem, tau := float64(e.Info.MemoryBytes), e.Info.Tau
		ff.Servers = append(ff.Servers, fleet.FileServer{
			Name: e.NodeID, MemoryBytes: &mem, Tau: &tau, RTT: map[string]float64{FleetClient: e.Info.ClientRTT}, Span: e.Info.Span.String(),
		})
	}
	if _, err := ff.Fleet(); err != nil {
		return fleet.File{}, fmt.Errorf("the live fleet is not a valid fleet file: %w", err)
	}
	return ff, nil
}
