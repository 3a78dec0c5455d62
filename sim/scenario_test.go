package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/topologies"
)

func TestBLOOM176B(t *testing.T) {
	m := BLOOM176B()
	require.Equal(t, 70, m.Blocks)
	// 2,466,437,120 parameters * 4.25 bits / 8 * 1.01 = 1,323,397,667.2 bytes.
	require.Equal(t, int64(1_323_397_667), m.BlockBytes)
	// s_c = 2 * d_model * (lI + l_max) * 2 bytes = 2*14336*148*2 for 20 + 128.
	require.Equal(t, int64(8_486_912), m.CacheBytes(20, 128))
}

func TestClusteredFleetIsTable2(t *testing.T) {
	for cc, want := range [][]float64{
		// client RTT to the 2 A100s (Cluster1) then the 7 MIGs (Cluster2)
		{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1},
		{0.005, 0.005, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1},
		{0.1, 0.1, 0.005, 0.005, 0.005, 0.005, 0.005, 0.005, 0.005},
	} {
		f, err := Clustered(cc)
		require.NoError(t, err)
		require.NoError(t, f.Validate())
		require.Equal(t, want, f.ClientRTT)
		kinds := map[string]int{}
		for _, s := range f.Servers {
			kinds[s.Hardware.Kind]++
		}
		require.Equal(t, map[string]int{"A100": 2, "MIG": 7}, kinds)
		require.Equal(t, 0.005, f.ServerRTT[0][1], "A100s share Cluster1")
		require.Equal(t, 0.1, f.ServerRTT[0][2], "A100 to MIG crosses clusters")
	}
	_, err := Clustered(3)
	require.ErrorIs(t, err, ErrBadConfig)
}

// TestPetalsBlockCounts checks the parameter chain against paper 003 Sec.
// 4.2: "PETALS places 53 blocks on A100 and 4 blocks on MIG".
func TestPetalsBlockCounts(t *testing.T) {
	f, err := Clustered(0)
	require.NoError(t, err)
	a, err := LookupAlgorithm("petals")
	require.NoError(t, err)
	w := Workload{Rate: 0.1, Requests: 5, InputTokens: 20, OutputTokens: 128}
	res, err := Run(f, w, []Algorithm{a}, rand.New(rand.NewPCG(1, 1)), nil)
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"A100": 53, "MIG": 4}, res[0].Blocks)
}

// TestSessionTimeClustered computes eq. (1) by hand for the clustered fleet
// with the client next to the A100s (Cluster1), R = 1: CG-BP gives each
// A100 min(floor(86.13e9 / (1323397667 + 8486912)), 70) = 64 blocks, the
// first A100 [0,64) and the second [6,70), and the route is A100-0 then
// A100-1 (64 + 6 blocks).
//
//	tI_cj  = 0.005 + 0.067 + 0.7049e-3*20   = 0.086098 s per hop
//	tauI   = 32.99e-3 + 0.0743e-3*20         = 0.034476 s per block
//	t_cj   = 0.005 + 0.1                     = 0.105 s per hop
//	F = 2*0.086098 + 70*0.034476 = 2.585516 s
//	D = 2*0.105 + 70*3.2197e-3   = 0.435379 s
//	T = F + 127 D                = 57.878649 s for l_max = 128
func TestSessionTimeClustered(t *testing.T) {
	f, err := Clustered(1)
	require.NoError(t, err)
	got, err := SessionTime(f, Workload{Rate: 0.1, Requests: 1, InputTokens: 20, OutputTokens: 128})
	require.NoError(t, err)
	require.InDelta(t, 2.585516+127*0.435379, got, 1e-9)
}

func TestOnTopology(t *testing.T) {
	top, err := topologies.LoadRepetita(testenv.SharedFile(t, "topologies", "repetita", "2016TopologyZooUCL_unary", "Abvt.graph"))
	require.NoError(t, err)
	rtt, err := top.RTT()
	require.NoError(t, err)
	for _, tt := range []struct {
		servers int
		eta     float64
		a100    int
	}{{9, 0.2, 2}, {22, 0.5, 11}, {5, 0, 0}, {3, 1, 3}} {
		f, err := OnTopology(top, rtt, tt.servers, tt.eta, rand.New(rand.NewPCG(4, uint64(tt.servers))))
		require.NoError(t, err)
		require.NoError(t, f.Validate())
		require.Len(t, f.Servers, tt.servers)
		nodes := map[int]bool{}
		a100 := 0
		for j, s := range f.Servers {
			require.False(t, nodes[s.Node], "one server per node")
			nodes[s.Node] = true
			if s.Hardware.Kind == "A100" {
				a100++
			}
			require.Equal(t, rtt.At(f.ClientNode, s.Node), f.ClientRTT[j])
		}
		require.False(t, nodes[f.ClientNode], "the client sits at a node without a server")
		require.Equal(t, tt.a100, a100)
	}
	for _, bad := range []struct {
		servers int
		eta     float64
		want    string
	}{{23, 0.2, "want 1..22"}, {0, 0.2, "want 1..22"}, {5, 1.5, "eta"}} {
		_, err := OnTopology(top, rtt, bad.servers, bad.eta, rand.New(rand.NewPCG(1, 1)))
		require.ErrorIs(t, err, ErrBadConfig)
		require.ErrorContains(t, err, bad.want)
	}
}
