package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// PlanProtocol is how servers that are not replicas learn the committed
// plan and report their moves: one JSON request and one JSON answer per
// stream. A report is recorded for the stream's remote peer (libp2p
// authenticates it), so a server can only report its own moves.
const PlanProtocol protocol.ID = "/swarm/plan/1"

const (
	// maxServiceBytes bounds a request and an answer, bytes.
	maxServiceBytes = 1 << 20
	// serviceTimeout bounds one request on the replica's side.
	serviceTimeout = 30 * time.Second
)

// serviceRequest is {"op":"get"} or {"op":"report","epoch":E,"progress":{...}}.
type serviceRequest struct {
	Op       string    `json:"op"`
	Epoch    uint64    `json:"epoch,omitempty"`
	Progress *Progress `json:"progress,omitempty"`
}

// serviceReply carries the plan (get) or the error's text (both).
type serviceReply struct {
	Plan  *Plan  `json:"plan,omitempty"`
	Error string `json:"error,omitempty"`
}

// ServePlans answers PlanProtocol on the replica's host until Close: the
// current committed plan (a linearizable read), and reports of the remote
// peer's moves.
func (r *Replica) ServePlans() {
	r.h.SetStreamHandler(PlanProtocol, r.servePlan)
}

func (r *Replica) servePlan(s network.Stream) {
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), serviceTimeout)
	defer cancel()
	_ = s.SetDeadline(time.Now().Add(serviceTimeout + time.Second))
	var req serviceRequest
	if err := json.NewDecoder(io.LimitReader(s, maxServiceBytes)).Decode(&req); err != nil {
		_ = s.Reset()
		return
	}
	var rep serviceReply
	switch req.Op {
	case "get":
		p, err := r.Current(ctx)
		if err != nil {
			rep.Error = err.Error()
		} else {
			rep.Plan = &p
		}
	case "report":
		if req.Progress == nil {
			rep.Error = "report without progress"
		} else if err := r.Report(ctx, req.Epoch, s.Conn().RemotePeer().String(), *req.Progress); err != nil {
			rep.Error = err.Error()
		}
	default:
		rep.Error = fmt.Sprintf("unknown operation %q (want get or report)", req.Op)
	}
	_ = json.NewEncoder(s).Encode(rep)
}

// Client reaches the planner group from a server that is not a replica,
// over PlanProtocol, trying the members in order until one answers.
type Client struct {
	h       host.Host
	members []peer.ID
}

// NewClient returns a client of the group of members over h.
func NewClient(h host.Host, members []peer.ID) (*Client, error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("%w: no planner members", ErrBadConfig)
	}
	return &Client{h: h, members: append([]peer.ID(nil), members...)}, nil
}

// Current returns the committed plan as a member reads it.
func (c *Client) Current(ctx context.Context) (Plan, error) {
	rep, err := c.call(ctx, serviceRequest{Op: "get"})
	if err != nil {
		return Plan{}, err
	}
	if rep.Plan == nil {
		return Plan{}, errors.New("planner: the member answered no plan")
	}
	return *rep.Plan, nil
}

// Report records this host's progress on its move in epoch.
func (c *Client) Report(ctx context.Context, epoch uint64, p Progress) error {
	_, err := c.call(ctx, serviceRequest{Op: "report", Epoch: epoch, Progress: &p})
	return err
}

// call sends req to the members in order; a member's refusal (an answer
// with an error) is returned as is, a member that cannot be reached is
// skipped.
func (c *Client) call(ctx context.Context, req serviceRequest) (serviceReply, error) {
	var errs []error
	for _, m := range c.members {
		rep, err := c.callOne(ctx, m, req)
		if err == nil {
			if rep.Error != "" {
				return rep, fmt.Errorf("planner: member %s: %s", m, rep.Error)
			}
			return rep, nil
		}
		if ctx.Err() != nil {
			return serviceReply{}, ctx.Err()
		}
		errs = append(errs, fmt.Errorf("member %s: %w", m, err))
	}
	return serviceReply{}, fmt.Errorf("planner: no member answered: %w", errors.Join(errs...))
}

func (c *Client) callOne(ctx context.Context, m peer.ID, req serviceRequest) (serviceReply, error) {
	s, err := c.h.NewStream(network.WithAllowLimitedConn(ctx, limitedReason), m, PlanProtocol)
	if err != nil {
		return serviceReply{}, err
	}
	defer s.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	if err := json.NewEncoder(s).Encode(req); err != nil {
		_ = s.Reset()
		return serviceReply{}, err
	}
	_ = s.CloseWrite()
	var rep serviceReply
	if err := json.NewDecoder(io.LimitReader(s, maxServiceBytes)).Decode(&rep); err != nil {
		return serviceReply{}, err
	}
	return rep, nil
}
