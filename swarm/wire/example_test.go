package wire_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// Example shows one step of a session over a byte stream: the client writes
// a Step, the server reads it and answers with a Result.
func Example() {
	var conn bytes.Buffer // any reliable byte stream: a TCP or libp2p stream
	step := &wire.Step{SessionID: "s1", Position: 0, Hidden: wire.Hidden{
		DType: swarm.DTypeF16, NTokens: 1, DModel: 4, Data: []float32{0.5, -1, 2, 0.25},
	}}
	if err := wire.Encode(&conn, step); err != nil {
		panic(err)
	}

	// Server side: bound the payload by the model's shape.
	f, err := wire.Decode(&conn, wire.MaxStepPayload(512, 4))
	if err != nil {
		// Answer malformed input with an Error frame, then close.
		_ = wire.Encode(&conn, wire.NewError("", wire.CodeOf(err), err))
		return
	}
	switch f := f.(type) {
	case *wire.Step:
		fmt.Printf("step %s at %d: [%d, %d] %s %v\n", f.SessionID, f.Position, f.Hidden.NTokens, f.Hidden.DModel, f.Hidden.DType, f.Hidden.Data)
	}
	// Output: step s1 at 0: [1, 4] f16 [0.5 -1 2 0.25]
}

// ExampleError shows how a client branches on a received Error frame.
func ExampleError() {
	msg, _ := wire.Marshal(&wire.Error{SessionID: "s1", Code: wire.CodeTimeout, Message: "waited 30s for room"})
	f, _ := wire.Unmarshal(msg, 0)
	var err error = f.(*wire.Error)
	var remote *wire.Error
	if errors.As(err, &remote) && remote.Code == wire.CodeTimeout {
		fmt.Println("retry elsewhere:", err)
	}
	// Output: retry elsewhere: wire: remote error Timeout (session "s1"): waited 30s for room
}
