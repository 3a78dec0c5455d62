package churn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// IdleAttack is what the idle-session attacker did: one client that opens
// sessions of max_length 1 on the servers' websockets and never steps
// them (issue 19, failure 1).
type IdleAttack struct {
	// Opens counts the Open frames sent; Granted, Waiting and Refused the
	// answers (a Waiting is counted, then its final answer too).
	Opens   int `json:"opens"`
	Granted int `json:"granted"`
	Waiting int `json:"waiting"`
	Refused int `json:"refused"`
	// Conns counts the websocket connections opened; DialErrors the ones
	// that failed; Dropped the ones the server closed on the attacker.
	Conns      int `json:"conns"`
	DialErrors int `json:"dial_errors"`
	Dropped    int `json:"dropped"`
	// FirstRefusal is the first error a server answered.
	FirstRefusal string `json:"first_refusal,omitempty"`
}

// attackerAddr is the attacker's source address: another loopback
// address than the proxy's 127.0.0.1, so that the servers' per-peer cap
// (keyed by remote IP on websockets) tells the two apart as it would two
// hosts.
var attackerAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}

var attackDialer = &websocket.Dialer{NetDialContext: (&net.Dialer{LocalAddr: attackerAddr}).DialContext, HandshakeTimeout: 10 * time.Second}

// target is one server the attacker opens sessions on.
type target struct {
	url  string
	span swarm.Span
}

// attackConnCap bounds the attacker's connections, so it never runs out
// of file descriptors itself.
const attackConnCap = 512

// idleAttack sends up to opens Open frames of model round-robin over the
// targets, as fast as the servers answer, on as many connections as the
// servers' per-connection caps make it need, then holds every connection
// open, never stepping, until ctx ends. It returns after closing them.
func idleAttack(ctx context.Context, targets []target, model string, opens int) IdleAttack {
	var (
		st     IdleAttack
		mu     sync.Mutex
		conns  []api.FrameConn
		closed bool
	)
	// At ctx's end every connection closes, which also ends a read that
	// waits for a server that never answers.
	closeAll := func() {
		mu.Lock()
		defer mu.Unlock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
	}
	stop := context.AfterFunc(ctx, closeAll)
	defer func() {
		if stop() {
			closeAll()
		}
	}()
	refuse := func(err error) {
		st.Refused++
		if st.FirstRefusal == "" {
			st.FirstRefusal = err.Error()
		}
	}
	for i := 0; st.Opens < opens && st.Conns < attackConnCap && ctx.Err() == nil; i++ {
		t := targets[i%len(targets)]
		ws, resp, err := attackDialer.DialContext(ctx, t.url, nil)
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err != nil {
			st.DialErrors++
			continue
		}
		st.Conns++
		c := api.NewWebsocket(ws, 0)
		mu.Lock()
		conns = append(conns, c)
		if closed {
			c.Close()
		}
		mu.Unlock()
		// One connection: Opens until the server refuses one or drops it.
	open:
		for st.Opens < opens && ctx.Err() == nil {
			st.Opens++
			if err := c.WriteFrame(&wire.Open{Model: model, Span: t.span, MaxLength: 1, DType: swarm.DTypeF32}); err != nil {
				st.Dropped++
				break
			}
			for {
				f, err := c.ReadFrame()
				var we *wire.Error
				switch fr := f.(type) {
				case *wire.Granted:
					st.Granted++
					continue open
				case *wire.Waiting:
					st.Waiting++
					continue
				case *wire.Error:
					refuse(fr)
					break open
				default:
					if errors.As(err, &we) {
						refuse(we)
					} else if err != nil {
						st.Dropped++
					} else {
						refuse(fmt.Errorf("unexpected %T frame", f))
					}
					break open
				}
			}
		}
	}
	<-ctx.Done()
	return st
}
