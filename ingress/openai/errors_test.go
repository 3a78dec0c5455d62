package openai

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress"
)

// TestMessage: error messages lose the Go packages' sentinel prefixes.
func TestMessage(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: the body is not the expected JSON", ErrBadRequest), "the body is not the expected JSON"},
		{badParam("n", "n = 2 is not supported"), "n = 2 is not supported"},
		{fmt.Errorf("%w: %w", ErrTemplate, errors.New("roles must alternate")), "chat template: roles must alternate"},
		{fmt.Errorf("%w: no allowed server hosts blocks 3:5", ingress.ErrNoRoute), "no allowed server hosts blocks 3:5"},
		{fmt.Errorf("%w: %w: timeout", ingress.ErrUpstream, ingress.ErrBadRequest), "timeout"},
		{errors.New("something else"), "something else"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, message(tt.err))
	}
}
