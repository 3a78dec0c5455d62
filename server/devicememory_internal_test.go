package server

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
)

// gpuTwin is the CPU backend standing in for a backend with a device of
// its own (the CUDA backend's MemoryBytes), for the memory default only.
type gpuTwin struct {
	blocks.Backend
	free int64
	err  error
}

func (g gpuTwin) MemoryBytes() (int64, error) { return g.free, g.err }

// A backend with its own device offers that device's free memory; the
// CPU has none (the machine's memory applies); a device that cannot say
// fails naming itself.
func TestDeviceMemory(t *testing.T) {
	m, ok, err := deviceMemory(blocks.CPU())
	require.NoError(t, err)
	require.False(t, ok)
	require.Zero(t, m)

	m, ok, err = deviceMemory(gpuTwin{Backend: blocks.CPU(), free: 80 << 30})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(80<<30), m)

	_, ok, err = deviceMemory(gpuTwin{Backend: blocks.CPU(), err: errors.New("cuMemGetInfo failed")})
	require.True(t, ok)
	require.ErrorContains(t, err, "free memory of device cpu: cuMemGetInfo failed")

	_, _, err = Config{Device: "nosuch"}.DeviceMemory()
	require.ErrorIs(t, err, ErrBadConfig)
	_, ok, err = Config{Device: "cpu"}.DeviceMemory()
	require.NoError(t, err)
	require.False(t, ok)
}
